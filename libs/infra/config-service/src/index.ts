/**
 * @switchyard/config-service: switchyard.v1.ConfigService, the configuration API. It changes the
 * workspace records in the config KV bucket that every service watches; delivery serves it.
 */
export { READ_ONLY_MESSAGE, SECRET_PLACEHOLDER, configService } from "./config-service.js";
/** A Webhooks (Actions) mapping message as the record holds it, masked values standing for the stored ones. */
export { actionMappingRecord } from "./destination-kinds.js";
