/**
 * The service token (AI_SIDEBAR_TOKEN) the plugin and the ai-chat node send, and the supervised service gets.
 *
 * A service without a token cannot tell Node-RED from any other local process, so it believes no identity header
 * (issue 29). When Node-RED's environment names no token and the plugin starts the service itself
 * (`aiSidebar.startService`), it generates one: 32 random bytes, kept in `<userDir>/ai-sidebar/service-token`
 * (mode 0600, in a 0700 folder), as Node-RED keeps its credential secret in the user directory, and reused across
 * restarts. The file is created whole or not at all (written aside, then linked into place), so the plugin and the
 * ai-chat node, which both ask, read the same token.
 */
"use strict";

const crypto = require("crypto");
const fs = require("fs");
const path = require("path");

const FILE_NAME = "service-token";
// base64url of 32 random bytes; a shorter file is not ours (or was cut) and is replaced.
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43,}$/;

/**
 * The path of the generated token's file.
 *
 * @param {string} userDir Node-RED's user directory
 * @returns {string}
 */
function tokenPath(userDir) {
    return path.join(userDir, "ai-sidebar", FILE_NAME);
}

/**
 * The token kept in `file`, made first when there is none (or none that is valid).
 *
 * @param {string} file
 * @returns {string}
 * @throws {Error} when the folder or the file cannot be written or read
 */
function keptToken(file) {
    const folder = path.dirname(file);
    fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
    for (let attempt = 0; attempt < 3; attempt += 1) {
        let text = null;
        try {
            text = fs.readFileSync(file, "utf8").trim();
        } catch (err) {
            if (err.code !== "ENOENT") {
                throw err;
            }
        }
        if (text !== null && TOKEN_PATTERN.test(text)) {
            if ((fs.statSync(file).mode & 0o077) !== 0) {
                fs.chmodSync(file, 0o600);
            }
            return text;
        }
        if (text !== null) {
            fs.unlinkSync(file);
        }
        const aside = file + "." + process.pid + "." + crypto.randomBytes(6).toString("hex");
        fs.writeFileSync(aside, crypto.randomBytes(32).toString("base64url") + "\n", { mode: 0o600, flag: "wx" });
        try {
            fs.linkSync(aside, file);  // fails with EEXIST when another caller's token got there first: read that
        } catch (err) {
            if (err.code !== "EEXIST") {
                throw err;
            }
        } finally {
            fs.unlinkSync(aside);
        }
    }
    throw new Error("could not keep a service token in " + file);
}

/**
 * The token to send the service: Node-RED's AI_SIDEBAR_TOKEN when set, else, when the plugin starts the service
 * itself, the generated one (see the module comment), else none (a service started by hand without a token: it
 * then treats every request as the anonymous editor's, read-only).
 *
 * @param {object} env Node-RED's environment
 * @param {{userDir: string, aiSidebar?: {startService?: boolean}}} settings Node-RED's runtime settings
 * @returns {{token: (string|undefined), generated: boolean}}
 * @throws {Error} when the generated token's file cannot be written or read
 */
function serviceToken(env, settings) {
    if (env.AI_SIDEBAR_TOKEN) {
        return { token: env.AI_SIDEBAR_TOKEN, generated: false };
    }
    const options = (settings && settings.aiSidebar) || {};
    if (!options.startService || !settings.userDir) {
        return { token: undefined, generated: false };
    }
    return { token: keptToken(tokenPath(settings.userDir)), generated: true };
}

module.exports = { serviceToken, tokenPath };
