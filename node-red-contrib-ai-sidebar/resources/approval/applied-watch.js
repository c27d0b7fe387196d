/**
 * An applied change's line follows the editor (issue 31, "state that goes stale"): after Ctrl-Z it says the change
 * was undone, after the user edits or deletes what it added or changed it says the change was changed since (the
 * card then shows what was applied, as history, not the current values), and after Redo (Ctrl-Y) or an undo of
 * the user's own edit it says applied again. Each new state is reported to the service, so a reopened conversation
 * says the same.
 *
 * Undone is not offered as a button to apply again: the editor's Redo does that while the change is in its redo
 * history, and applying a change the user took back on a flow that moved on since is not safe.
 *
 * How it knows (Node-RED's editor, @node-red/editor-client red.js): every undo, redo and edit ends by setting the
 * workspace's dirty state, which emits `workspace:dirty`; `RED.history.list()` is the undo stack, from which Ctrl-Z
 * pops the change's entry (a Redo pushes a new one). The change counts as applied while every node it added or
 * changed has the values it had right after the change and every node it deleted is gone.
 *
 * Editor-only script: registers `NodeRedAiSidebar.appliedWatch`.
 */
(function () {
    "use strict";

    /** The applied properties of each node of `record` as they are now in the editor (null: the node is gone). */
    function valuesNow(RED, record) {
        var values = {};
        record.nodes.forEach(function (item) {
            var node = RED.nodes.node(item.id) || RED.nodes.group(item.id);
            var kept = null;
            if (node) {
                kept = {};
                item.keys.forEach(function (name) {
                    kept[name] = node[name];
                });
                try {
                    kept = JSON.stringify(kept);
                } catch {
                    kept = String(Math.random());  // not comparable: counts as changed
                }
            }
            values[item.id] = kept;
        });
        return values;
    }

    /**
     * "applied", "undone" or "changed": what became of an applied change in the editor (see the module's
     * description). `watched.applied` holds the values right after the change.
     */
    function stateOf(RED, watched) {
        var now = valuesNow(RED, watched.record);
        var asApplied = Object.keys(watched.applied).every(function (id) {
            return now[id] !== null && now[id] === watched.applied[id];
        }) && watched.record.deletes.every(function (id) {
            return !RED.nodes.node(id);
        });
        var inHistory = RED.history.list().indexOf(watched.entry) !== -1;
        if (asApplied && !inHistory) {
            // Redone: the editor pushed a new entry for it.
            watched.entry = RED.history.peek();
        }
        return asApplied ? "applied" : inHistory ? "changed" : "undone";
    }

    /**
     * Follow an applied change until `line` leaves the page (another conversation shown, the sidebar closed).
     *
     * @param {object} RED the editor's API
     * @param {{entry: object, nodes: {id: string, keys: string[]}[], deletes: string[]}} record flowChange.applyChange's
     * @param {jQuery} line the element that says what was applied
     * @param {function(string)} onState called with "applied", "undone" or "changed" each time the state changes
     * @returns {function()} stops following
     */
    function follow(RED, record, line, onState) {
        var watched = { record: record, entry: record.entry, applied: valuesNow(RED, record), state: "applied" };
        var queued = false;
        // Checked once the editor's step ended: an undo or redo emits its events before it updates the history.
        function queue() {
            if (!queued) {
                queued = true;
                setTimeout(check, 0);
            }
        }
        function check() {
            queued = false;
            if (!document.body.contains(line[0])) {
                stop();
                return;
            }
            var state = stateOf(RED, watched);
            if (state !== watched.state) {
                watched.state = state;
                onState(state);
            }
        }
        function stop() {
            RED.events.off("workspace:dirty", queue);
            RED.events.off("nodes:change", queue);
        }
        RED.events.on("workspace:dirty", queue);
        RED.events.on("nodes:change", queue);
        return stop;
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.appliedWatch = { follow: follow, stateOf: stateOf };
}());
