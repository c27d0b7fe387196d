/**
 * Assist in the node edit dialogs (issue 20, /work/briefs/contracts20.md): the request an "Ask the assistant" sends
 * to `ai-sidebar/assist`, and what the editor makes of the `proposal` that comes back (per-part diffs of function
 * code, the sandbox's answer, a JSONata proposal checked and evaluated by the editor's own engine, a JSON value).
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.assistRequest`) and in Node.js by the
 * package's tests (`require`). Nothing here touches the DOM or `RED`: jsdiff and jsonata are passed in.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.assistRequest = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const KINDS = ["function", "jsonata", "json"];
    // The function node's three code properties, in the order its dialog shows their tabs (10-function.html: On Start,
    // On Message, On Stop), under the contract's names.
    const PARTS = ["onStart", "onMessage", "onStop"];
    const MAX_DIFF_LINES = 400;
    // Node-RED's own test for an expression written for the old `msg.` form (editor-client expression editor:
    // such expressions are evaluated against {msg: <test message>}).
    const LEGACY_MSG = /(^|[^a-zA-Z0-9_'".])msg([^a-zA-Z0-9_'"]|$)/;
    // Functions of the runtime that the editor's test has no value for (the expression editor binds them too).
    const RUNTIME_ONLY = ["flowContext", "globalContext", "env", "moment", "clone"];

    function text(value) {
        return typeof value === "string" ? value : "";
    }

    /**
     * The body of `POST ai-sidebar/assist`.
     *
     * @param {("function"|"jsonata"|"json")} kind
     * @param {string} description the user's words
     * @param {object} context what the dialog shows (contract "Request body"); empty strings and missing values
     *     are left out
     * @param {{language: (string|undefined), configId: (string|undefined)}} [options] the editor's language; the
     *     sidebar's chosen ai-config node, which the relay turns into `provider` as it does for stream-chat
     * @returns {object}
     * @throws {Error} for a kind the contract does not name
     */
    function requestBody(kind, description, context, options) {
        if (KINDS.indexOf(kind) === -1) {
            throw new Error("unknown assist kind " + JSON.stringify(kind));
        }
        options = options || {};
        const body = { kind: kind, description: String(description).trim(), context: {} };
        Object.keys(context || {}).forEach(function (key) {
            const value = context[key];
            if (value !== undefined && value !== null && value !== "") {
                body.context[key] = value;
            }
        });
        if (options.language) {
            body.language = options.language;
        }
        if (options.configId) {
            body.configId = options.configId;
        }
        return body;
    }

    /**
     * What an assist answer says besides its code: the text without its fenced code blocks (``` or ~~~, CommonMark;
     * an unclosed fence runs to the end), runs of blank lines made one, trimmed. Shown above a proposal, whose own
     * view (diff, result) already shows the code.
     *
     * @param {string} answer the streamed Markdown
     * @returns {string} "" when the answer was code only
     */
    function proseOf(answer) {
        const kept = [];
        let fence = null;
        String(answer || "").split("\n").forEach(function (line) {
            const opening = /^ {0,3}(`{3,}|~{3,})/.exec(line);
            if (fence === null) {
                if (opening) {
                    fence = opening[1];
                } else {
                    kept.push(line);
                }
            } else if (opening && opening[1].charAt(0) === fence.charAt(0) && opening[1].length >= fence.length &&
                       line.trim() === opening[1]) {
                fence = null;
            }
        });
        return kept.join("\n").replace(/\n\s*\n(\s*\n)+/g, "\n\n").trim();
    }

    /**
     * The streamed answer as the panel shows it: the lines that open or close a fenced code block (``` or ~~~ with
     * the language after it) left out, the code between them kept (issue 31: the model's raw fences showed).
     *
     * @param {string} answer the Markdown streamed so far
     * @returns {string}
     */
    function withoutFences(answer) {
        let fence = null;
        return String(answer || "").split("\n").filter(function (line) {
            const opening = /^ {0,3}(`{3,}|~{3,})/.exec(line);
            if (!opening) {
                return true;
            }
            if (fence === null) {
                fence = opening[1];
                return false;
            }
            if (opening[1].charAt(0) === fence.charAt(0) && opening[1].length >= fence.length &&
                line.trim() === opening[1]) {
                fence = null;
                return false;
            }
            return true;
        }).join("\n");
    }

    /**
     * The code the dialog would hold after Accept: the proposal's parts replace the current ones, parts it leaves
     * out stay as they are.
     *
     * @param {{onMessage: string, onStart: string, onStop: string}} current
     * @param {object} proposed the proposal's `code`
     * @returns {{onMessage: string, onStart: string, onStop: string}}
     */
    function mergedCode(current, proposed) {
        const merged = {};
        PARTS.forEach(function (part) {
            merged[part] = typeof (proposed || {})[part] === "string" ? proposed[part] : text((current || {})[part]);
        });
        return merged;
    }

    /**
     * The line diff of one part. Unlike approval-diff.js's lineDiff (one property on an approval card), it counts
     * the added and removed lines for the part's heading and ends both texts with a newline, so that a last line
     * the proposal merely follows with more lines is not shown as changed.
     *
     * @param {string} before
     * @param {string} after
     * @param {{diffLines: function(string, string): {value: string, added: boolean, removed: boolean}[]}} Diff jsdiff
     * @returns {{lines: {kind: ("+"|"-"|" "), text: string}[], added: number, removed: number, omitted: number}}
     */
    function lineDiff(before, after, Diff) {
        const lines = [];
        let added = 0;
        let removed = 0;
        Diff.diffLines(before ? before.replace(/\n?$/, "\n") : "", after ? after.replace(/\n?$/, "\n") : "")
            .forEach(function (piece) {
                const kind = piece.added ? "+" : piece.removed ? "-" : " ";
                piece.value.replace(/\n$/, "").split("\n").forEach(function (line) {
                    lines.push({ kind: kind, text: line });
                    added += kind === "+" ? 1 : 0;
                    removed += kind === "-" ? 1 : 0;
                });
            });
        return { lines: lines.slice(0, MAX_DIFF_LINES), added: added, removed: removed,
            omitted: Math.max(0, lines.length - MAX_DIFF_LINES) };
    }

    /**
     * The parts a proposal changes, each with its diff, in the dialog's tab order.
     *
     * @param {object} current the dialog's code (see mergedCode)
     * @param {object} proposed the proposal's `code`
     * @param {object} Diff jsdiff
     * @returns {{part: string, before: string, after: string, diff: object}[]} empty when nothing changes
     */
    function changedParts(current, proposed, Diff) {
        const merged = mergedCode(current, proposed);
        return PARTS.filter(function (part) {
            return merged[part] !== text((current || {})[part]);
        }).map(function (part) {
            const before = text((current || {})[part]);
            return { part: part, before: before, after: merged[part], diff: lineDiff(before, merged[part], Diff) };
        });
    }

    /**
     * The problems of `ai-sidebar/function-check`, in the dialog's tab order, each with its place.
     *
     * @param {*} answer the route's answer, `{problems: [{code, message, line?, column?, part}]}`
     * @returns {{code: string, message: string, part: string, line: (number|null), column: (number|null)}[]}
     */
    function problemList(answer) {
        const problems = answer && Array.isArray(answer.problems) ? answer.problems : [];
        return problems.filter(function (problem) {
            return problem && typeof problem === "object";
        }).map(function (problem) {
            return {
                code: text(problem.code) || "problem",
                message: text(problem.message),
                part: PARTS.indexOf(problem.part) === -1 ? "onMessage" : problem.part,
                line: typeof problem.line === "number" ? problem.line : null,
                column: typeof problem.column === "number" ? problem.column : null
            };
        }).sort(function (a, b) {
            return PARTS.indexOf(a.part) - PARTS.indexOf(b.part) || (a.line || 0) - (b.line || 0);
        });
    }

    /**
     * The body of `POST ai-sidebar/function-sandbox` for the proposed On Message code and one sample message.
     *
     * @param {string} onMessage
     * @param {*} sample a recent input message of the node (from the proposal's `samples`)
     * @param {number} outputs the dialog's outputs count
     * @returns {{code: {onMessage: string}, msg: *, outputs: number}}
     */
    function sandboxBody(onMessage, sample, outputs) {
        const count = Number(outputs);
        return { code: { onMessage: text(onMessage) }, msg: sample,
            outputs: Number.isInteger(count) && count >= 0 ? count : 1 };
    }

    /**
     * What the sandbox's answer shows.
     *
     * @param {*} answer `{outputs: [[msg|null, …] …], logs: [{level, text}], error?: {code, message}}`
     * @returns {{error: ?{code: string, message: string}, outputs: {port: number, messages: *[]}[],
     *     logs: {level: string, text: string}[]}} `port` is 1-based; ports that sent nothing are left out
     */
    function sandboxView(answer) {
        answer = answer && typeof answer === "object" ? answer : {};
        const outputs = [];
        (Array.isArray(answer.outputs) ? answer.outputs : []).forEach(function (sent) {
            const perPort = Array.isArray(sent) ? sent : [sent];
            perPort.forEach(function (message, index) {
                if (message === null || message === undefined) {
                    return;
                }
                let entry = outputs.find(function (output) { return output.port === index + 1; });
                if (!entry) {
                    entry = { port: index + 1, messages: [] };
                    outputs.push(entry);
                }
                entry.messages = entry.messages.concat(Array.isArray(message) ? message : [message]);
            });
        });
        outputs.sort(function (a, b) { return a.port - b.port; });
        const error = answer.error && typeof answer.error === "object"
            ? { code: text(answer.error.code) || "sandbox_error", message: text(answer.error.message) } : null;
        return {
            error: error,
            outputs: outputs,
            logs: (Array.isArray(answer.logs) ? answer.logs : []).filter(function (log) {
                return log && typeof log === "object";
            }).map(function (log) {
                return { level: text(log.level) || "log", text: text(log.text) };
            })
        };
    }

    /**
     * Check a proposed JSONata expression with the editor's own engine and evaluate it on the Test tab's message,
     * as the expression editor's Test tab does.
     *
     * @param {function(string): object} jsonata the editor's `jsonata`
     * @param {string} expression the proposal
     * @param {string} testText the Test tab's example message (JSON text)
     * @returns {Promise<{ok: boolean, stage: ("parse"|"message"|"evaluate"|undefined), message: (string|undefined),
     *     result: *, noMatch: (boolean|undefined), runtimeOnly: string[]}>} `ok` false with `stage` "parse" (the
     *     parser's message: the proposal is refused), "message" (the test message is not JSON) or "evaluate" (the
     *     engine's error); `runtimeOnly` names runtime functions the expression called, which the test cannot know
     */
    function checkExpression(jsonata, expression, testText) {
        let compiled;
        try {
            compiled = jsonata(expression);
        } catch (err) {
            return Promise.resolve({ ok: false, stage: "parse", message: String(err && err.message || err),
                runtimeOnly: [] });
        }
        const runtimeOnly = [];
        RUNTIME_ONLY.forEach(function (name) {
            compiled.assign(name, function () {
                if (runtimeOnly.indexOf(name) === -1) {
                    runtimeOnly.push(name);
                }
                return null;
            });
        });
        let input;
        try {
            input = JSON.parse(testText);
        } catch (err) {
            return Promise.resolve({ ok: false, stage: "message", message: String(err && err.message || err),
                runtimeOnly: [] });
        }
        if (LEGACY_MSG.test(expression)) {
            input = { msg: input };
        }
        return Promise.resolve().then(function () {
            // JSONata 2 (Node-RED 4.1 and 5) answers with a promise; JSONata 1 with the value.
            return compiled.evaluate(input);
        }).then(function (result) {
            return { ok: true, result: result, noMatch: result === undefined, runtimeOnly: runtimeOnly };
        }, function (err) {
            return { ok: false, stage: "evaluate", message: String(err && err.message || err),
                runtimeOnly: runtimeOnly };
        });
    }

    /**
     * The JSON a `json` proposal offers: its `text` when `JSON.parse` accepts it, else its `value` pretty-printed.
     *
     * @param {object} proposal `{kind: "json", value, text}`
     * @returns {{ok: true, text: string, value: *}|{ok: false, message: string}} `message`: the parser's
     */
    function jsonProposal(proposal) {
        const candidate = typeof proposal.text === "string" ? proposal.text
            : JSON.stringify(proposal.value, null, 4);
        try {
            return { ok: true, text: candidate, value: JSON.parse(candidate) };
        } catch (err) {
            return { ok: false, message: String(err && err.message || err) };
        }
    }

    return {
        KINDS: KINDS,
        PARTS: PARTS,
        MAX_DIFF_LINES: MAX_DIFF_LINES,
        requestBody: requestBody,
        proseOf: proseOf,
        withoutFences: withoutFences,
        mergedCode: mergedCode,
        lineDiff: lineDiff,
        changedParts: changedParts,
        problemList: problemList,
        sandboxBody: sandboxBody,
        sandboxView: sandboxView,
        checkExpression: checkExpression,
        jsonProposal: jsonProposal
    };
}));
