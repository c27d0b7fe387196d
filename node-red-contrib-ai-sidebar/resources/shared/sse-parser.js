/**
 * Incremental parser for the service's Server-Sent Events stream (DESIGN.md, "Stream events").
 *
 * Feed it decoded text in whatever pieces the network delivers; it calls `onEvent` once per complete frame whose
 * `data:` lines hold JSON, ignores comment lines (`: ping`) and calls `onInvalid` with the raw data of a frame
 * that is not JSON. Frames end at a blank line; CRLF, CR and LF line endings are accepted, even when a CRLF pair
 * is split across two pieces (https://html.spec.whatwg.org/multipage/server-sent-events.html).
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.createSseParser`) and in Node.js by the
 * package's tests (`require`).
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.createSseParser = factory().createSseParser;
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /**
     * @param {function(object)} onEvent called with each parsed event object, in order
     * @param {function(string)} [onInvalid] called with the raw data of a frame that is not JSON
     * @returns {{push: function(string), end: function()}} `push` a piece of text; `end` flushes a final frame
     *     that lacked its closing blank line
     */
    function createSseParser(onEvent, onInvalid) {
        let buffer = "";

        function dispatch(frame) {
            const dataLines = [];
            frame.split("\n").forEach(function (line) {
                if (line === "" || line.charAt(0) === ":") {
                    return;
                }
                const colon = line.indexOf(":");
                const field = colon === -1 ? line : line.slice(0, colon);
                let value = colon === -1 ? "" : line.slice(colon + 1);
                if (value.charAt(0) === " ") {
                    value = value.slice(1);
                }
                if (field === "data") {
                    dataLines.push(value);
                }
            });
            if (dataLines.length === 0) {
                return;
            }
            const data = dataLines.join("\n");
            let event;
            try {
                event = JSON.parse(data);
            } catch {
                if (onInvalid) {
                    onInvalid(data);
                }
                return;
            }
            onEvent(event);
        }

        function drain(final) {
            // A trailing CR may be the first half of a CRLF pair: keep it until the next piece decides.
            let ready = buffer;
            let held = "";
            if (!final && ready.charAt(ready.length - 1) === "\r") {
                held = "\r";
                ready = ready.slice(0, -1);
            }
            ready = ready.replace(/\r\n?/g, "\n");
            const frames = ready.split("\n\n");
            const rest = final ? "" : frames.pop();
            frames.forEach(dispatch);
            buffer = rest + held;
        }

        return {
            push: function (text) {
                buffer += text;
                drain(false);
            },
            end: function () {
                drain(true);
                buffer = "";
            }
        };
    }

    return { createSseParser: createSseParser };
}));
