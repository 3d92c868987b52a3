/** Sent in every call's context.library; a test keeps it equal to package.json's version. */
export const LIBRARY = { name: "@switchyard/analytics", version: "0.1.0" } as const;
