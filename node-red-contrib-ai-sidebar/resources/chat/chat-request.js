/**
 * One question of the sidebar: how long it is against the service's limit, the body sent to the plugin's
 * `ai-sidebar/stream-chat` route (DESIGN.md "HTTP API"), and what the sidebar does once the answer ended.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.chatRequest`) and in Node.js by the
 * package's tests (`require`). Nothing here touches the DOM or `RED`: the editor's state is passed in.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.chatRequest = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // The service's default limit on a question (Settings.max_message_chars, refused with 413 message_too_long),
    // used while the service has not said its own (GET ai-sidebar/scenarios `maxMessageChars`); the counter shows
    // from COUNTER_SHARE of the limit on.
    const MAX_MESSAGE_CHARS = 10000;
    const COUNTER_SHARE = 0.9;
    const COUNTER_FROM = MAX_MESSAGE_CHARS * COUNTER_SHARE;
    // Faults that setting up another model mends (README's error table): the setup card follows such an answer.
    const SETUP_CODES = ["provider_not_configured", "invalid_api_key"];

    /**
     * The limit on a question as the service's scenarios answer states it.
     *
     * @param {?object} scenarios the body of GET ai-sidebar/scenarios (null when the service could not be asked)
     * @returns {number} its `maxMessageChars` when that is a positive whole number, else MAX_MESSAGE_CHARS
     */
    function messageLimit(scenarios) {
        const max = scenarios && scenarios.maxMessageChars;
        return Number.isInteger(max) && max > 0 ? max : MAX_MESSAGE_CHARS;
    }

    /**
     * The length counter of a question being typed.
     *
     * @param {string} text what the input holds
     * @param {number} [max] the service's limit in characters (messageLimit); MAX_MESSAGE_CHARS when omitted
     * @returns {?{count: number, max: number, over: boolean}} null while the question is short enough not to show
     *     one (below 90 % of the limit); `count` in characters (code points) of the trimmed text, as the service
     *     counts them
     */
    function counter(text, max) {
        max = max || MAX_MESSAGE_CHARS;
        const from = Math.floor(max * COUNTER_SHARE);
        text = String(text || "");
        // UTF-16 length is never below the number of characters, so short texts need no counting.
        const count = text.length < from ? text.length : Array.from(text.trim()).length;
        if (count < from) {
            return null;
        }
        return { count: count, max: max, over: count > max };
    }

    /**
     * The request for one question: the editor context (open tab as the editor has it, selected nodes) unless
     * the user removed the context chip.
     *
     * @param {object} question
     * @param {string} question.message
     * @param {string} question.sessionId
     * @param {string} question.language the editor's language (`RED.i18n.lang()`)
     * @param {string} [question.scenario] the chosen scenario key
     * @param {string} [question.configId] the chosen `ai-config` node
     * @param {string} [question.mode] the sidebar's mode, "ask" or "agent" (modeChoice)
     * @param {boolean} question.contextRemoved
     * @param {object[]} [question.debugMessages] attached Debug messages (editorContext.debugAttachment), sent
     *     even when the chip was removed
     * @param {{kind: string, id: string, label: string}[]} [question.mentions] the @-mentions whose chips the user
     *     kept (mention-chips.js), sent even when the context chip was removed
     * @param {object[]} [question.attachments] the files pasted or dropped whose chips the user kept
     *     (attachment-chips.js `sent`)
     * @param {?{id: string, label: string}} question.flow the open tab (editorContext.selectedFlow)
     * @param {{id: string, type: string, name: string}[]} question.nodes the selected nodes
     * @param {function(): ?{nodes: (object[]|undefined), bytes: (number|undefined)}} question.exportTab the open
     *     tab's nodes as the editor has them (flow-blocks.js exportActiveTab), or its size when too large to send;
     *     may throw
     * @param {function(string, Error)} [question.warn] told when the export failed (the question goes out anyway)
     * @param {function(): string[]} [question.lockedFlows] the ids of the tabs and subflows locked in the editor
     *     (editorContext.lockedFlows); sent even when the context chip was removed: it decides which changes the
     *     assistant may propose, not what it is told
     * @returns {{body: object, flowDataBytes: (number|undefined)}} `flowDataBytes` is set when the tab was too
     *     large to send
     */
    function build(question) {
        const body = {
            message: question.message,
            sessionId: question.sessionId,
            language: question.language,
            // An approved write comes back as a flow_change event for the editor to apply, undeployed and
            // undoable; the service never deploys a change asked for here.
            apply: "editor",
            selectedFlow: null,
            selectedNodes: []
        };
        const result = { body: body };
        if (question.scenario) {
            body.scenario = question.scenario;
        }
        if (question.configId) {
            body.configId = question.configId;
        }
        if (question.mode) {
            body.mode = question.mode;
        }
        if (question.debugMessages && question.debugMessages.length) {
            body.debugMessages = question.debugMessages.slice();
        }
        if (question.lockedFlows) {
            body.lockedFlows = question.lockedFlows();
        }
        if (question.mentions && question.mentions.length) {
            // What the user pointed at with `@` goes even when the context chip was removed: they chose it.
            body.mentions = question.mentions.slice();
        }
        if (question.attachments && question.attachments.length) {
            // Pasted or dropped files go even when the context chip was removed: the user chose them.
            body.attachments = question.attachments.slice();
        }
        if (question.contextRemoved) {
            return result;
        }
        const flow = question.flow;
        body.selectedFlow = flow ? { id: flow.id, label: flow.label } : null;
        body.selectedNodes = question.nodes;
        if (flow) {
            let exported = null;
            try {
                exported = question.exportTab();
            } catch (err) {
                // An export failure must not stop the question: the service reads the deployed flow instead.
                if (question.warn) {
                    question.warn("[ai-sidebar] could not export the open tab:", err);
                }
            }
            if (exported && exported.nodes) {
                body.flowData = exported.nodes;
            } else if (exported) {
                result.flowDataBytes = exported.bytes;
            }
        }
        return result;
    }

    /**
     * The request of a Retry or of "switch to Agent and send again": the question, context and scenario it went
     * out with, but the AI configuration and mode chosen now (issue 31: a Retry after choosing a working
     * configuration resent the old one and failed again).
     *
     * @param {{body: object}} request what build() returned for the first try (left unchanged)
     * @param {{configId: string, mode: (string|undefined)}} now the picker's choice ("" for the service default)
     *     and the mode
     * @returns {{body: object}} a copy with `configId` and `mode` set (or left out) as now
     */
    function again(request, now) {
        const body = Object.assign({}, request.body);
        delete body.configId;
        delete body.mode;
        if (now.configId) {
            body.configId = now.configId;
        }
        if (now.mode) {
            body.mode = now.mode;
        }
        return Object.assign({}, request, { body: body });
    }

    /**
     * What Up and Down do in the question input (the habit users bring from Copilot Chat and shells): Up in an
     * empty input brings back the conversation's last question; Down while that recalled question is unchanged
     * empties the input again. Any other key, or Up/Down in a typed text, is left to the textarea (moving the caret).
     *
     * @param {string} key the keyboard event's `key` (the caller passes no key while a modifier or an IME
     *     composition is active)
     * @param {string} input what the input holds
     * @param {string} last the conversation's last question as shown ("" when it has none)
     * @param {?string} recalled what the last Up put in the input (null when nothing was recalled since)
     * @returns {?string} the input's new text, or null when the key is not for recalling
     */
    function recall(key, input, last, recalled) {
        if (key === "ArrowUp" && input === "" && last) {
            return last;
        }
        if (key === "ArrowDown" && recalled !== null && recalled !== undefined && input === recalled) {
            return "";
        }
        return null;
    }

    /**
     * What follows the end of an answer.
     *
     * @param {object} ended
     * @param {boolean} ended.failed the answer showed an error
     * @param {boolean} ended.received some of the answer (text, a tool event) came
     * @param {boolean} ended.stopped the user stopped it
     * @param {boolean} ended.fromInput the question was typed (not an action's)
     * @param {boolean} ended.inputEmpty nothing was typed since
     * @param {string[]} [ended.errorCodes] the codes of the errors the answer showed (its error events and a
     *     refused request's)
     * @returns {{restoreInput: boolean, retry: boolean, markSaved: boolean, expectSaved: boolean,
     *     setup: boolean}} put the
     *     question back in the input (nothing of an answer came: refused, too long, service down; also for an
     *     action's question, so it can be changed and sent again); offer Retry (the answer failed, was cut off or
     *     was stopped); the session is saved now; the session list should name the session soon (read it again
     *     until it does); show the setup card under the answer (the model is not set up or refused the key)
     */
    function afterAnswer(ended) {
        const refused = ended.failed && !ended.received;
        return {
            restoreInput: refused && ended.inputEmpty,
            retry: ended.failed || ended.stopped,
            markSaved: ended.received,
            // The service saves the turn and names a new session after its first question; a stopped one is saved
            // once the service notices the closed connection.
            expectSaved: !refused || ended.stopped,
            setup: (ended.errorCodes || []).some(function (code) {
                return SETUP_CODES.indexOf(code) !== -1;
            })
        };
    }

    /**
     * Which stored messages a Retry replaced (issue 31: a retried question appeared twice): a question whose answer
     * failed or was stopped (its answer's metadata, or the question's when the service kept no answer, has `errors`
     * or `stopped`), followed by the same question again. The sidebar shows only the last try, live (retry()) and
     * after a reload alike; a Regenerate of an answer that did not fail keeps both answers.
     *
     * @param {{role: string, content: string, metadata: ?object}[]} messages a session's history, in order
     * @returns {Set<number>} the indexes of the replaced questions and their answers
     */
    function replacedTries(messages) {
        const replaced = new Set();
        messages.forEach(function (message, index) {
            if (!message || message.role !== "user") {
                return;
            }
            const answer = messages[index + 1] && messages[index + 1].role === "assistant" ? messages[index + 1] : null;
            const next = messages[index + (answer ? 2 : 1)];
            if (!next || next.role !== "user" || next.content !== message.content) {
                return;
            }
            const metadata = ((answer || message).metadata) || {};
            if (!answer || (Array.isArray(metadata.errors) && metadata.errors.length) || metadata.stopped === true) {
                replaced.add(index);
                if (answer) {
                    replaced.add(index + 1);
                }
            }
        });
        return replaced;
    }

    return {
        MAX_MESSAGE_CHARS: MAX_MESSAGE_CHARS,
        COUNTER_FROM: COUNTER_FROM,
        messageLimit: messageLimit,
        counter: counter,
        build: build,
        again: again,
        replacedTries: replacedTries,
        recall: recall,
        afterAnswer: afterAnswer
    };
}));
