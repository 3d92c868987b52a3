// Makes one call and neither flushes nor closes the client: the process must still deliver the call
// and then exit by itself. Run by process.test.ts with ENDPOINT, WRITE_KEY and MESSAGE_ID set.
import { Analytics } from "../../src/index.js";

const analytics = new Analytics(process.env.WRITE_KEY ?? "", { endpoint: process.env.ENDPOINT });
analytics.track({ userId: "script-user", event: "Script Ran", messageId: process.env.MESSAGE_ID });
