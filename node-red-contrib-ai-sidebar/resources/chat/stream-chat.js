/**
 * The request that streams an answer: POST a question (or a resume, an assist request) through the plugin and feed
 * the server-sent events to an answer (answer.js's Answer, an approval card's or the assist panel's sink).
 *
 * Editor-only script: registers `NodeRedAiSidebar.streamChat`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function sidebarLib() {
        return window.NodeRedAiSidebar;
    }

    // The service writes a ": ping" comment every 15 s of an open stream (service/web/sse.py PING_INTERVAL), and its
    // answer's headers come at once: this long without a byte, before or during the stream, and the service may be
    // stopped or stuck (it accepts connections, so nothing fails), so `onSilence` is called, and again each time.
    var SILENCE_MS = 20000;

    /**
     * Call `onSilence` every SILENCE_MS without a byte from the request, until `stop()`.
     *
     * @param {function()} onSilence
     * @returns {{heard: function(), stop: function()}}
     */
    function silenceWatch(onSilence) {
        var timer = null;
        function arm() {
            clearTimeout(timer);
            timer = setTimeout(function () {
                onSilence();
                arm();
            }, SILENCE_MS);
        }
        arm();
        return {
            heard: arm,
            stop: function () {
                clearTimeout(timer);
            }
        };
    }

    /**
     * POST the question and feed the streamed events to `answer`.
     *
     * @param {object} body the stream-chat request (DESIGN.md, "HTTP API")
     * @param {AbortSignal} signal aborts the request (Stop button)
     * @param {Answer} answer receives the events
     * @param {string} [route] the plugin route that streams: "ai-sidebar/stream-chat" (default) or
     *     "ai-sidebar/resume" (approval-card.js)
     * @param {function()} [onSilence] called after SILENCE_MS without a byte of the answer, and again after each
     *     further SILENCE_MS (the sidebar asks whether the service still answers)
     * @returns {Promise<{ok: boolean, error: (Error|undefined)}>} settles when the stream ends: `ok` when a
     *     stream was read to its end, `error` the ApiError of a refused request; rejects with an AbortError
     *     when stopped and with a TypeError when Node-RED cannot be reached
     */
    function streamChat(body, signal, answer, route, onSilence) {
        var adminApi = sidebarLib().adminApi;
        var url = adminApi.routeUrl(route || "ai-sidebar/stream-chat");
        var options = {
            method: "POST",
            headers: adminApi.requestHeaders({ "Content-Type": "application/json", "Accept": "text/event-stream" }),
            body: JSON.stringify(body),
            signal: signal
        };
        // Armed once the request could be built (a body that cannot be sent throws before any timer runs).
        var silence = silenceWatch(onSilence || function () {});
        return fetch(url, options).then(function (response) {
            silence.heard();
            var contentType = response.headers.get("Content-Type") || "";
            if (!response.ok) {
                return response.text().then(function (text) {
                    var error = new adminApi.ApiError(response.status, adminApi.errorFromText(text));
                    answer.error(error.message);
                    return { ok: false, error: error };
                });
            }
            if (!/^text\/event-stream/i.test(contentType) || !response.body) {
                answer.error(t("error.notStream"));
                return (response.body ? response.body.cancel() : Promise.resolve()).then(function () {
                    return { ok: false };
                });
            }
            var parser = sidebarLib().createSseParser(function (event) {
                answer.handleEvent(event);
            }, function () {
                answer.error(t("error.badEvent"));
            });
            var reader = response.body.getReader();
            var decoder = new TextDecoder();
            function pump() {
                return reader.read().then(function (result) {
                    silence.heard();
                    if (result.done) {
                        parser.push(decoder.decode());
                        parser.end();
                        if (!answer.sawDone) {
                            answer.error(t("error.incomplete"));
                        }
                        return { ok: true };
                    }
                    parser.push(decoder.decode(result.value, { stream: true }));
                    return pump();
                });
            }
            return pump();
        }).finally(function () {
            silence.stop();
        });
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.streamChat = streamChat;
}());
