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
    // Monaco's action that asks the inline completion providers at the cursor (in 0.52, Node-RED 4.1, and 0.55, 5.x).
    var TRIGGER = "editor.action.inlineSuggest.trigger";
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
        creation = monaco.editor.onDidCreateEditor(watch);
    }

    /**
     * Whether the function editor `where` ({@link editorOf}) still holds Node-RED's stand-in `model`: Node-RED (4.1 and
     * 5.x, red.js createEditor) gives each JavaScript editor a "text" model first and swaps in a new "javascript" one
     * on a timer 5-10 ms after the editor is first shown or focused (its setMode; again at each tab switch).
     */
    function standIn(where, model) {
        return where.kind === "function" && model.getLanguageId() !== "javascript";
    }

    /**
     * Keep completion working in a new Monaco `editor` (one of {@link EDITORS} or not) while Node-RED opens it. Each
     * focus makes its inline completion controller ({@link CONTROLLER}). Node-RED's model swap ({@link standIn}) falls
     * on the first keys typed into a dialog when the machine is loaded (its timer runs late):
     *
     * - It disposes the stand-in model while the editor still holds it. Monaco 0.52 (Node-RED 4.1) fetching a
     *   completion for that model then throws "Model is disposed!" out of the swap, and the editor's controller never
     *   asks again (Monaco 0.55, Node-RED 5, just drops that completion): the stand-in gets no inline suggestions,
     *   and a key typed into it is asked about once the new model is there.
     * - Monaco carries the keyboard focus across one setModel call only; the swap makes two (null, then the new
     *   model), so a key typed next would go nowhere (until Node-RED's own refocus 300 ms later, if at all): the focus
     *   is given back.
     */
    function watch(editor) {
        var focused = false; // the user's focus is in the editor (the swap does not take it away)
        var typed = false;   // the user typed into the stand-in model
        function where() {
            return registration && editor.getModel() ? editorOf(editor.getModel()) : null;
        }
        editor.onDidFocusEditorText(function () {
            focused = true;
            if (where()) {
                editor.getContribution(CONTROLLER);
            }
        });
        editor.onDidBlurEditorText(function () {
            // Monaco 0.55 (Node-RED 5) reports a blur when the swap takes the model away: not the user leaving.
            if (editor.getModel()) {
                focused = false;
            }
        });
        editor.onDidChangeModelContent(function (event) {
            var place = focused && !event.isFlush && !typed ? where() : null;
            typed = typed || Boolean(place && standIn(place, editor.getModel()));
        });
        editor.onDidChangeModel(function () {
            var place = where();
            var retry = typed;
            if (!place) {
                return;
            }
            var model = editor.getModel();
            typed = false;
            editor.updateOptions({ inlineSuggest: { enabled: !standIn(place, model) } });
            if (!focused || standIn(place, model) || !enabled()) {
                return;
            }
            if (!editor.hasTextFocus()) {
                editor.focus();
            }
            if (retry) {
                // Once Node-RED's setMode has put the cursor back: Monaco stops a completion when the API moves it.
                Promise.resolve().then(function () {
                    if (editor.getModel() === model && editor.hasTextFocus()) {
                        editor.trigger("ai-sidebar", TRIGGER, {});
                    }
                });
            }
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
