/**
 * The sidebar's calls to the plugin's admin routes (`ai-sidebar/*`, served by plugins/ai-sidebar.js), and the
 * translation of their errors into the editor user's language.
 *
 * Editor-only script: registers `NodeRedAiSidebar.adminApi`. URLs are relative to the editor's admin root, so a
 * custom httpAdminRoot keeps working, and every request carries the editor's bearer token, which plain `fetch`
 * does not add (jQuery's ajaxSetup does that for the editor's own calls only).
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    // Error codes produced by the plugin itself (plugins/lib/relay.js, plugins/lib/provider.js), which the sidebar
    // translates.
    var RELAY_ERROR_CODES = ["service_unreachable", "service_disconnected", "service_bad_answer", "config_not_found"];

    function t(key, options) {
        return RED._(NS + key, options);
    }

    /** URL of a plugin admin route, relative so that a custom httpAdminRoot keeps working. */
    function routeUrl(path) {
        return (RED.settings.apiRootUrl || "") + path;
    }

    /** Headers for fetch, with the editor's access token when adminAuth is on. */
    function requestHeaders(extra) {
        var headers = $.extend({}, extra);
        var tokens = RED.settings.get("auth-tokens");
        if (tokens && tokens.access_token) {
            headers["Authorization"] = "Bearer " + tokens.access_token;
        }
        return headers;
    }

    /**
     * A failed admin request: `status` (0 when Node-RED itself could not be reached), the design's error `code`
     * and a message already translated for the user.
     */
    function ApiError(status, error) {
        this.name = "ApiError";
        this.status = status;
        this.code = (error && error.code) || (status ? "http_" + status : "network");
        this.message = describeError(status, error);
    }
    ApiError.prototype = Object.create(Error.prototype);
    ApiError.prototype.constructor = ApiError;

    /** Whether an error means the assistant service (not Node-RED) is down. */
    ApiError.prototype.serviceUnreachable = function () {
        return this.code === "service_unreachable";
    };

    /**
     * The message for a `{code, message}` error: the plugin's own relay errors are translated here (the runtime
     * does not know the editor user's language); the service's messages are shown as the service wrote them. A
     * service a supervisor is starting again (`restarting`, plugins/lib/relay.js) is said to be restarting.
     */
    function localizedError(error) {
        if (error.code === "service_unreachable" && error.restarting === true) {
            return t("error.codes.service_restarting");
        }
        if (RELAY_ERROR_CODES.indexOf(error.code) !== -1) {
            return t("error.codes." + error.code, { url: error.serviceUrl || "" });
        }
        return error.message || error.code;
    }

    function describeError(status, error) {
        if (error && (error.message || error.code)) {
            return localizedError(error);
        }
        if (status === 401 || status === 403) {
            return t("error.unauthorized");
        }
        if (!status) {
            return t("error.network", { message: (error && error.detail) || "" });
        }
        return t("error.status", { status: status });
    }

    /** The design's `error` object from a response body, or null (e.g. an empty 401 from Node-RED's auth). */
    function errorFromText(text) {
        try {
            var body = JSON.parse(text);
            if (body && body.error && typeof body.error === "object") {
                return body.error;
            }
        } catch {
            // Not JSON: the caller falls back to a message for the status.
        }
        return null;
    }

    /**
     * Call an admin route that answers JSON.
     *
     * @param {string} method "GET", "POST", "PATCH" or "DELETE"
     * @param {string} path e.g. "ai-sidebar/sessions" (path segments already URL-encoded)
     * @param {object} [body] sent as JSON
     * @returns {Promise<object>} the parsed body of a 2xx answer; rejects with an ApiError otherwise
     */
    function requestJson(method, path, body) {
        var options = {
            method: method,
            headers: requestHeaders({ "Accept": "application/json" })
        };
        if (body !== undefined) {
            options.headers["Content-Type"] = "application/json";
            options.body = JSON.stringify(body);
        }
        return fetch(routeUrl(path), options).catch(function (err) {
            throw new ApiError(0, { detail: (err && err.message) || String(err) });
        }).then(function (response) {
            return response.text().then(function (text) {
                if (!response.ok) {
                    throw new ApiError(response.status, errorFromText(text));
                }
                try {
                    return text ? JSON.parse(text) : {};
                } catch {
                    throw new ApiError(response.status, { code: "service_bad_answer" });
                }
            });
        });
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.adminApi = {
        RELAY_ERROR_CODES: RELAY_ERROR_CODES,
        ApiError: ApiError,
        routeUrl: routeUrl,
        requestHeaders: requestHeaders,
        requestJson: requestJson,
        errorFromText: errorFromText,
        describeError: describeError,
        localizedError: localizedError
    };
}());
