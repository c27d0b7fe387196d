/**
 * Inline completion as ghost text in the code editors of the edit dialogs (issue 39): the function node's On
 * Message, On Start and On Stop code, the template node's body and the expression editor's JSONata.
 *
 * Editor-only script: registers `NodeRedAiSidebar.completionProvider`. One Monaco inline completions provider
 * (`monaco.languages.registerInlineCompletionsProvider`, present in the Monaco of Node-RED 4.1 and 5.x, which both
 * put it on `window.monaco`) is registered for every language; it answers only for an editor inside one of the
 * containers Node-RED's own templates give those editors ({@link EDITORS}). Monaco shows the text as ghost text,
 * Tab accepts it, Ctrl/Cmd-Right accepts a word, Escape dismisses it (Monaco's own keys), and Monaco cancels the
 * request when the user types on (its cancellation token), which aborts the fetch.
 *
 * Off: per user (`RED.settings` "aiSidebarCompletion" false, toggled by the action {@link TOGGLE_ACTION} and by the
 * checkbox of the User Settings pane, completion-setting.js), without
 * the `ai-sidebar.read` permission, and for the rest of the page once the service answers `completion_disabled`
 * (`AI_SIDEBAR_COMPLETION=false`). The Ace editor, when the user chose it, has no completion.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var ROUTE = "ai-sidebar/complete";
    var SETTING = "aiSidebarCompletion";
    var TOGGLE_ACTION = "ai-sidebar:toggle-inline-completion";
    // Container id (Node-RED's 10-function.html, 80-template.html, the expression editor) → the request's kind.
    var EDITORS = {
        "node-input-func-editor": { kind: "function", part: "onMessage" },
        "node-input-init-editor": { kind: "function", part: "onStart" },
        "node-input-finalize-editor": { kind: "function", part: "onStop" },
        "node-input-template-editor": { kind: "template" },
        "red-ui-editor-type-expression": { kind: "jsonata" }
    };
    // Monaco creates an editor's inline completion controller when the page is next idle (a contribution
    // instantiated "eventually"): keys typed before then ask nothing. Asking for it creates it at once.
    var CONTROLLER = "editor.contrib.inlineCompletionsController";
    var SELECTOR = Object.keys(EDITORS).map(function (id) { return "#" + id; }).join(",");

    var registration = null;
    var creation = null;
    var source = null;
    var refused = false; // the service said completion is off for this Node-RED

    function lib() {
        return window.NodeRedAiSidebar;
    }

    function enabled() {
        return !refused && RED.settings.get(SETTING) !== false && RED.user.hasPermission("ai-sidebar.read");
    }

    /** The kind of code the Monaco editor of `model` holds, or null when it is none of {@link EDITORS}. */
    function editorOf(model) {
        var editors = window.monaco.editor.getEditors().filter(function (editor) {
            return editor.getModel() === model;
        });
        if (!editors.length) {
            return null;
        }
        var container = $(editors[0].getContainerDomNode()).closest(SELECTOR);
        return container.length ? EDITORS[container.attr("id")] : null;
    }

    /** POST one request; resolves to the completion text. */
    function ask(body, signal) {
        var api = lib().adminApi;
        return fetch(api.routeUrl(ROUTE), {
            method: "POST",
            headers: api.requestHeaders({ "Content-Type": "application/json", "Accept": "application/json" }),
            body: JSON.stringify(body),
            signal: signal
        }).then(function (response) {
            return response.json().catch(function () { return {}; }).then(function (answer) {
                if (!response.ok) {
                    if (answer.error && answer.error.code === "completion_disabled") {
                        refused = true;
                    }
                    throw new api.ApiError(response.status, answer.error);
                }
                return typeof answer.completion === "string" ? answer.completion : "";
            });
        });
    }

    function requestBody(where, model, position) {
        var end = model.getFullModelRange();
        var body = {
            kind: where.kind,
            before: model.getValueInRange({ startLineNumber: 1, startColumn: 1,
                endLineNumber: position.lineNumber, endColumn: position.column }),
            after: model.getValueInRange({ startLineNumber: position.lineNumber, startColumn: position.column,
                endLineNumber: end.endLineNumber, endColumn: end.endColumn })
        };
        if (where.part) {
            body.part = where.part;
        }
        var node = lib().assistEditors.editedNodeContext();
        if (node.nodeId) {
            body.nodeId = node.nodeId;
            body.nodeType = node.nodeType;
            body.name = node.name;
        }
        var configId = lib().AssistPanel.chosenConfigId();
        if (configId) {
            body.configId = configId;
        }
        return body;
    }

    var provider = {
        provideInlineCompletions: function (model, position, context, token) {
            var where = enabled() ? editorOf(model) : null;
            if (!where) {
                return { items: [] };
            }
            var version = model.getAlternativeVersionId();
            return source.complete(requestBody(where, model, position), function (cancel) {
                token.onCancellationRequested(cancel);
            }).then(function (text) {
                // Never a completion for text that has changed since it was asked for.
                if (!text || token.isCancellationRequested || model.getAlternativeVersionId() !== version) {
                    return { items: [] };
                }
                return { items: [{ insertText: text, range: new window.monaco.Range(position.lineNumber,
                    position.column, position.lineNumber, position.column) }] };
            }, function (err) {
                if (!err || !err.cancelled) {
                    console.warn("ai-sidebar completion:", err && err.message);
                }
                return { items: [] };
            });
        },
        // Monaco before 0.47 (Node-RED 4.1) calls the first, later ones (Node-RED 5) the second.
        freeInlineCompletions: function () {},
        disposeInlineCompletions: function () {}
    };

    /** Whether the user has inline completion on (their per-user setting; on unless they turned it off). */
    function isOn() {
        return RED.settings.get(SETTING) !== false;
    }

    /** Turn the user's inline completion on or off (the action and the User Settings pane both come here). */
    function setOn(on) {
        RED.settings.set(SETTING, !!on);
        if (!on && source) {
            source.cancel();
        }
    }

    function toggle() {
        var on = !isOn();
        setOn(on);
        RED.notify(RED._(NS + (on ? "completion.on" : "completion.off")), { type: "success", timeout: 2500 });
    }

    /** Register the provider and the toggle action (once; Node-RED without Monaco gets only the action). */
    function register() {
        RED.actions.add(TOGGLE_ACTION, toggle, { label: NS + "action.toggleCompletion" });
        var monaco = window.monaco;
        if (registration || !monaco || !monaco.languages ||
            typeof monaco.languages.registerInlineCompletionsProvider !== "function") {
            return;
        }
        source = new (lib().completionSource.CompletionSource)({ ask: ask });
        registration = monaco.languages.registerInlineCompletionsProvider("*", provider);
        creation = monaco.editor.onDidCreateEditor(function (editor) {
            var focus = editor.onDidFocusEditorText(function () {
                focus.dispose();
                if (editorOf(editor.getModel())) {
                    editor.getContribution(CONTROLLER);
                }
            });
        });
    }

    /** Undo {@link register} (the plugin is removed). */
    function unregister() {
        RED.actions.remove(TOGGLE_ACTION);
        if (source) {
            source.cancel();
        }
        if (registration) {
            registration.dispose();
            creation.dispose();
            registration = null;
        }
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.completionProvider = {
        register: register,
        unregister: unregister,
        isOn: isOn,
        setOn: setOn,
        stats: function () { return { registered: !!registration, requests: source ? source.requests : 0 }; }
    };
}());
