/**
 * Delivery refuses loopback receivers unless the operator allows them
 * (DELIVERY_ALLOWED_CIDRS, SSRF protection). Test receivers listen on
 * loopback, so every test that starts delivery allows it explicitly with this.
 */
export const LOOPBACK_CIDRS = "127.0.0.0/8,::1/128";
