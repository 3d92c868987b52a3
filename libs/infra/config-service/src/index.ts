/**
 * @switchyard/config-service: switchyard.v1.ConfigService, the configuration API. It changes the
 * workspace records in the config KV bucket that every service watches; delivery serves it.
 */
export { READ_ONLY_MESSAGE, SECRET_PLACEHOLDER, configService } from "./config-service.js";
