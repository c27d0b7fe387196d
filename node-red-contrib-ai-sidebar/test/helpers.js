/**
 * Small real HTTP servers for the tests: a scripted stand-in for the AI service, and a stand-in for Node-RED's
 * admin app that parses JSON bodies and hands each request to the relay, as the plugin's routes do.
 */
"use strict";

const http = require("http");
const { once } = require("events");

/**
 * Listen on an ephemeral loopback port.
 *
 * @param {http.Server} server
 * @returns {Promise<string>} the server's base URL
 */
async function listen(server) {
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return "http://127.0.0.1:" + server.address().port;
}

/**
 * Close a server and every connection it still holds.
 *
 * @param {http.Server} server
 */
async function close(server) {
    if (!server.listening) {
        return;
    }
    server.closeAllConnections();
    server.close();
    await once(server, "close");
}

/**
 * A loopback URL on which nothing listens (a port taken from the OS and released).
 *
 * @returns {Promise<string>}
 */
async function unusedUrl() {
    const server = http.createServer();
    const url = await listen(server);
    await close(server);
    return url;
}

/**
 * A fake AI service whose behaviour each test scripts through `handler(req, res, body)`.
 * Every request is recorded in `requests` as `{method, url, headers, body}`.
 *
 * @returns {Promise<{url: string, requests: object[], handler: function, server: http.Server}>}
 */
async function fakeService() {
    const service = { requests: [], handler: null };
    service.server = http.createServer(function (req, res) {
        const chunks = [];
        req.on("data", function (chunk) {
            chunks.push(chunk);
        });
        req.on("end", function () {
            const body = Buffer.concat(chunks).toString("utf8");
            service.requests.push({ method: req.method, url: req.url, headers: req.headers, body: body });
            service.handler(req, res, body);
        });
    });
    service.url = await listen(service.server);
    return service;
}

/**
 * A stand-in for Node-RED's admin app: JSON body parsing, an optional authenticated user, then the relay.
 *
 * @param {{forward: function}} relay
 * @param {object} route the route options passed to `relay.forward` (path, stream)
 * @param {{user?: object}} [options]
 * @returns {Promise<{url: string, server: http.Server, done: Promise<void>[]}>}
 */
async function editorApp(relay, route, options) {
    options = options || {};
    const app = { done: [] };
    app.server = http.createServer(function (req, res) {
        const chunks = [];
        req.on("data", function (chunk) {
            chunks.push(chunk);
        });
        req.on("end", function () {
            const text = Buffer.concat(chunks).toString("utf8");
            req.body = text ? JSON.parse(text) : {};
            req.originalUrl = req.url;
            if (options.user) {
                req.user = options.user;
            }
            app.done.push(relay.forward(req, res, route));
        });
    });
    app.url = await listen(app.server);
    return app;
}

/**
 * Send a request and resolve with the response as soon as its headers arrive (the body is left to read).
 *
 * @param {string} url
 * @param {{method?: string, headers?: object, body?: string}} [options]
 * @returns {Promise<{req: http.ClientRequest, res: http.IncomingMessage}>}
 */
function request(url, options) {
    options = options || {};
    return new Promise(function (resolve, reject) {
        const req = http.request(url, { method: options.method || "GET", headers: options.headers || {} });
        req.on("response", function (res) {
            resolve({ req: req, res: res });
        });
        req.on("error", reject);
        req.end(options.body);
    });
}

/**
 * Read a whole response body as text.
 *
 * @param {http.IncomingMessage} res
 * @returns {Promise<string>}
 */
async function readBody(res) {
    res.setEncoding("utf8");
    let text = "";
    for await (const chunk of res) {
        text += chunk;
    }
    return text;
}

/**
 * Read a response body chunk by chunk, as the network delivers it.
 *
 * @param {http.IncomingMessage} res
 * @returns {{next: function(): Promise<string|null>}} `next` resolves with the next chunk, or null at the end
 */
function chunkReader(res) {
    res.setEncoding("utf8");
    const iterator = res[Symbol.asyncIterator]();
    return {
        next: async function () {
            const result = await iterator.next();
            return result.done ? null : result.value;
        }
    };
}

/**
 * An access token of an adminAuth user through Node-RED's password grant (the test users' password is
 * "password123").
 *
 * @param {string} nodeRedUrl the admin root, ending in "/"
 * @param {string} username
 * @param {string} scope "*" or "read"
 * @returns {Promise<string>}
 */
async function adminToken(nodeRedUrl, username, scope) {
    const { res } = await request(nodeRedUrl + "auth/token", {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: "client_id=node-red-admin&grant_type=password&scope=" + encodeURIComponent(scope) +
            "&username=" + encodeURIComponent(username) + "&password=password123"
    });
    return JSON.parse(await readBody(res)).access_token;
}

/**
 * One JSON request with an optional bearer token; the answer's status and body (parsed when it is JSON).
 *
 * @param {string} url
 * @param {string} method
 * @param {*} [body] sent as JSON unless undefined
 * @param {string} [accessToken]
 * @returns {Promise<{status: number, body: *}>}
 */
async function jsonRequest(url, method, body, accessToken) {
    const headers = { "Content-Type": "application/json" };
    if (accessToken) {
        headers["Authorization"] = "Bearer " + accessToken;
    }
    const options = { method: method, headers: headers };
    if (body !== undefined) {
        options.body = JSON.stringify(body);
    }
    const { res } = await request(url, options);
    const text = await readBody(res);
    return { status: res.statusCode, body: /^application\/json/.test(res.headers["content-type"] || "") ?
        JSON.parse(text) : text };
}

module.exports = { listen, close, unusedUrl, fakeService, editorApp, request, readBody, chunkReader, adminToken,
    jsonRequest };
