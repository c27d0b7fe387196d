/**
 * Types into the editor's completion source (node-red-contrib-ai-sidebar/resources/completion/completion-source.js,
 * the debounce, cancellation and cache the Monaco provider uses) at a steady rate, each keystroke asking for a
 * completion as Monaco's inline completions provider does, against the Node-RED plugin's POST /ai-sidebar/complete.
 *
 * Usage: node completion_typing.js <admin url> [keystrokes=100] [per second=8]
 * Prints one JSON line: {keystrokes, seconds, sent (requests the source sent), answered, lateMs (the largest delay
 * of a keystroke behind its schedule: a busy machine types unevenly)}.
 */
"use strict";

const path = require("path");
const { CompletionSource } = require(path.join(__dirname, "..", "..", "node-red-contrib-ai-sidebar", "resources",
    "completion", "completion-source.js"));

const url = process.argv[2] + "/ai-sidebar/complete";
const keystrokes = Number(process.argv[3] || 100);
const rate = Number(process.argv[4] || 8);
const CODE = "const celsius = msg.payload.temperature;\nmsg.payload = { fahrenheit: celsius * 9 / 5 + 32, unit: 'F' };\n" +
    "node.status({ text: String(msg.payload.fahrenheit) });\nreturn msg;\n";

function ask(body, signal) {
    return fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
        signal: signal }).then(function (response) {
        return response.json().then(function (answer) {
            if (!response.ok) {
                throw new Error("HTTP " + response.status + " " + JSON.stringify(answer));
            }
            return answer.completion;
        });
    });
}

async function main() {
    const source = new CompletionSource({ ask: ask });
    let answered = 0;
    let failed = null;
    let last = null;
    let lateMs = 0;
    const started = Date.now();
    for (let key = 0; key < keystrokes; key++) {
        const due = started + key * 1000 / rate;
        const wait = due - Date.now();
        if (wait > 0) {
            await new Promise(function (resolve) { setTimeout(resolve, wait); });
        }
        lateMs = Math.max(lateMs, Date.now() - due);
        const before = CODE.repeat(Math.ceil(keystrokes / CODE.length) + 1).slice(0, key + 1);
        last = source.complete({ kind: "function", part: "onMessage", before: before, after: "",
            nodeType: "function", name: "convert" }).then(function () {
            answered += 1;
        }, function (err) {
            if (!err.cancelled) {
                failed = String(err.message || err);
            }
        });
    }
    await last;
    process.stdout.write(JSON.stringify({ keystrokes: keystrokes, seconds: (Date.now() - started) / 1000,
        sent: source.requests, answered: answered, lateMs: lateMs, failed: failed }) + "\n");
}

main().catch(function (err) {
    process.stderr.write(String(err && err.stack || err) + "\n");
    process.exit(1);
});
