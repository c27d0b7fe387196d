/**
 * The pure parts of the build cards (issue 34; README "Plan, ask, build, check"): what a `question` or `plan`
 * event (or the pending `ask_user` / `propose_plan` run of `ai-sidebar/approvals`) shows, the resume bodies its
 * buttons send, and the lines of a `check` or `verdict`'s evidence, as locale keys with their values.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.buildView`) and in Node.js by the package's
 * tests (`require`). Nothing here touches the DOM or `RED`.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.buildView = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // The service's own pausing tools (service/chat/pauses.py OWN_TOOLS) and its limit on quick replies.
    const ASK_USER = "ask_user";
    const PROPOSE_PLAN = "propose_plan";
    const DEPLOY_AND_TEST = "deploy_and_test";
    const MAX_CHOICES = 4;
    // A value seen or expected is shown on one line; longer ones are cut with an ellipsis.
    const VALUE_CHARS = 120;

    function strings(list) {
        return Array.isArray(list) ? list.filter(function (item) { return typeof item === "string"; }) : [];
    }

    /**
     * The fields of a `type` event, or the arguments of a pending run whose one action is a call of `tool`.
     *
     * @returns {?object} null for anything else
     */
    function fieldsOf(source, type, tool) {
        if (!source || typeof source.runId !== "string") {
            return null;
        }
        if (source.type === type) {
            return source;
        }
        var action = Array.isArray(source.actions) && source.actions.length === 1 ? source.actions[0] : null;
        return action && action.tool === tool && action.args ? action.args : null;
    }

    /**
     * What a question card shows, from a `question` event or a pending run (`{runId, actions: [{tool: "ask_user",
     * args}]}`).
     *
     * @param {object} source
     * @returns {?{runId: string, question: string, choices: string[], free: boolean}} null when it is no question
     */
    function questionOf(source) {
        var fields = fieldsOf(source, "question", ASK_USER);
        if (!fields) {
            return null;
        }
        return {
            runId: source.runId,
            question: typeof fields.question === "string" ? fields.question : "",
            choices: strings(fields.choices).slice(0, MAX_CHOICES),
            free: fields.free !== false
        };
    }

    /**
     * A check's test inject (added on a temporary test tab for the check, removed after it), or null.
     *
     * @returns {?{to: string, payload: string}}
     */
    function testInjectOf(check) {
        var inject = check && typeof check === "object" ? check.test_inject : null;
        if (!inject || typeof inject !== "object" || typeof inject.to !== "string") {
            return null;
        }
        return { to: inject.to, payload: valueText(inject.payload === undefined ? "" : inject.payload) };
    }

    /**
     * What a plan card shows, from a `plan` event or a pending run (`{runId, actions: [{tool: "propose_plan",
     * args}]}`): the steps in order, each with its changes' summaries and its test, and the assumptions.
     *
     * @param {object} source
     * @returns {?{runId: string, steps: {title: string, changes: string[], test: string,
     *     testInject: ?{to: string, payload: string}}[], assumptions: string[]}} null when it is no plan
     */
    function planOf(source) {
        var fields = fieldsOf(source, "plan", PROPOSE_PLAN);
        if (!fields) {
            return null;
        }
        var steps = (Array.isArray(fields.steps) ? fields.steps : []).filter(function (step) {
            return step && typeof step === "object";
        }).map(function (step) {
            return {
                title: typeof step.title === "string" ? step.title : "",
                changes: (Array.isArray(step.changes) ? step.changes : []).map(function (change) {
                    if (typeof change === "string") {
                        return change;
                    }
                    return change && (change.summary || change.tool) ? String(change.summary || change.tool) : "";
                }).filter(Boolean),
                test: typeof step.test === "string" ? step.test : "",
                testInject: testInjectOf(step.check)
            };
        });
        return { runId: source.runId, steps: steps, assumptions: strings(fields.assumptions) };
    }

    /**
     * The resume fields of a question's answer: a quick reply as `choice`, the user's words as `text`.
     *
     * @param {{choice: (string|undefined), text: (string|undefined)}} given
     * @returns {?{answer: object}} null for an empty free answer
     */
    function answerBody(given) {
        if (typeof given.choice === "string") {
            return { answer: { choice: given.choice } };
        }
        var text = typeof given.text === "string" ? given.text.trim() : "";
        return text ? { answer: { text: text } } : null;
    }

    /**
     * What a "Deploy and test" card shows, from a `deploy_test` event or a pending run (`{runId, actions: [{tool:
     * "deploy_and_test", args}]}`): a plan's build applied in the editor waits until the user deployed it.
     *
     * @param {object} source
     * @returns {?{runId: string, note: string}} null when it is none
     */
    function deployTestOf(source) {
        var fields = fieldsOf(source, "deploy_test", DEPLOY_AND_TEST);
        if (!fields) {
            return null;
        }
        return { runId: source.runId, note: typeof fields.note === "string" ? fields.note : "" };
    }

    /**
     * The resume fields of a decision on "Deploy and test": `deployed` (the editor's flows are deployed: test them)
     * or not (Not now: nothing is tested).
     *
     * @param {boolean} deployed
     * @returns {{decisions: object[]}}
     */
    function deployTestBody(deployed) {
        return { decisions: [deployed ? { type: "approve" } : { type: "reject", message: "The user did not deploy." }] };
    }

    /**
     * The resume fields of a decision on a plan.
     *
     * @param {"approve"|"approveAll"|"edit"|"reject"} kind Approve (a card per change), Approve the plan's changes,
     *     Change… (with `message`), Reject (with an optional reason)
     * @param {string} [message]
     * @returns {?{decisions: object[]}} null for a change without words
     */
    function planBody(kind, message) {
        var words = typeof message === "string" ? message.trim() : "";
        if (kind === "approve") {
            return { decisions: [{ type: "approve" }] };
        }
        if (kind === "approveAll") {
            return { decisions: [{ type: "approve", planChanges: true }] };
        }
        if (kind === "edit") {
            return words ? { decisions: [{ type: "edit", message: words }] } : null;
        }
        return { decisions: [words ? { type: "reject", message: words } : { type: "reject" }] };
    }

    /** A debug value on one line: strings as they are, the rest as JSON, cut at VALUE_CHARS. */
    function valueText(value) {
        var text;
        if (typeof value === "string") {
            text = value;
        } else {
            try {
                text = JSON.stringify(value);
            } catch {
                text = String(value);
            }
        }
        text = text === undefined ? String(value) : text;
        return text.length > VALUE_CHARS ? text.slice(0, VALUE_CHARS - 1) + "\u2026" : text;
    }

    /**
     * One evidence item of a `check` or `verdict` as a locale key under `build.evidence.` and its values.
     *
     * @param {{kind: string, node: (string|undefined), value: *, expected: *, message: (string|undefined),
     *     from: (string|undefined)}} item
     * @returns {{key: string, params: object}}
     */
    function evidenceLine(item) {
        item = item && typeof item === "object" ? item : {};
        var known = ["debug", "mismatch", "error", "silent", "missing", "ambiguous", "unwired"];
        var kind = known.indexOf(item.kind) !== -1 ? item.kind : "other";
        return {
            key: "build.evidence." + kind,
            params: {
                node: String(item.node || ""),
                value: valueText(item.value),
                expected: valueText(item.expected),
                message: String(item.message || ""),
                from: String(item.from || ""),
                kind: String(item.kind || "")
            }
        };
    }

    return {
        ASK_USER: ASK_USER,
        PROPOSE_PLAN: PROPOSE_PLAN,
        DEPLOY_AND_TEST: DEPLOY_AND_TEST,
        questionOf: questionOf,
        planOf: planOf,
        deployTestOf: deployTestOf,
        deployTestBody: deployTestBody,
        answerBody: answerBody,
        planBody: planBody,
        valueText: valueText,
        evidenceLine: evidenceLine
    };
}));
