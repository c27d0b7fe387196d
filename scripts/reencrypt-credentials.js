// Re-encrypt a Node-RED flows_cred.json from OLD_SECRET to NEW_SECRET (both from the environment, never argv, so
// they do not show in the process list). Exit 0 when re-encrypted (or not encrypted at all), 1 when OLD_SECRET
// does not decrypt it (the file is then left as it is).
// Format as in @node-red/runtime lib/nodes/credentials.js: {"$": hex(iv, 16 bytes) + base64(aes-256-ctr(json))},
// key = sha256(secret).
"use strict";
const crypto = require("crypto");
const fs = require("fs");

const file = process.argv[2];
const key = (secret) => crypto.createHash("sha256").update(secret).digest();
const stored = JSON.parse(fs.readFileSync(file, "utf8"));
if (typeof stored.$ !== "string") {
    process.exit(0);
}
let credentials;
try {
    const decipher = crypto.createDecipheriv("aes-256-ctr", key(process.env.OLD_SECRET),
                                             Buffer.from(stored.$.substring(0, 32), "hex"));
    credentials = JSON.parse(decipher.update(stored.$.substring(32), "base64", "utf8") + decipher.final("utf8"));
} catch (err) {
    process.exit(1);
}
const iv = crypto.randomBytes(16);
const cipher = crypto.createCipheriv("aes-256-ctr", key(process.env.NEW_SECRET), iv);
const encrypted = iv.toString("hex") + cipher.update(JSON.stringify(credentials), "utf8", "base64") +
    cipher.final("base64");
fs.writeFileSync(`${file}.new`, JSON.stringify({ $: encrypted }), { mode: 0o600 });
fs.renameSync(`${file}.new`, file);
