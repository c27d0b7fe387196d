/**
 * Which conversation (session) the sidebar shows, remembered in the browser per Node-RED user: the open session's
 * id, and whether it is one this sidebar started that the service has not saved yet (its history is then not
 * asked for: the service does not know it, and the browser would log the 404 as an error).
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.conversation`) and in Node.js by the
 * package's tests (`require`). Nothing here touches the DOM or `RED`: storage and randomness are passed in.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.conversation = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const SESSION_KEY = "node-red-contrib-ai-sidebar.sessionId";
    const NEW_SESSION_KEY = "node-red-contrib-ai-sidebar.newSessionId";
    const DRAFT_KEY = "node-red-contrib-ai-sidebar.draft";
    // Drafts longer than this are not kept (localStorage holds about 5 MB per editor origin, shared).
    const MAX_DRAFT_CHARS = 20000;
    // After an answer ends the session list is read again, to show the name the service gave a new session. A
    // stopped answer is saved once the service notices the closed connection, so until the session is listed
    // the list is read again after each of these delays (milliseconds).
    const SESSION_REFRESH_DELAYS_MS = [300, 700, 1500, 3000];

    /**
     * A storage key per Node-RED user, since several may share one browser.
     *
     * @param {string} key
     * @param {string} [username] `RED.settings.user.username`; none without adminAuth
     * @returns {string}
     */
    function userKey(key, username) {
        return username ? key + ":" + username : key;
    }

    /**
     * A random session id: 32 hex digits.
     *
     * @param {function(Uint8Array): Uint8Array} fillRandom e.g. `crypto.getRandomValues`, which works on plain-http
     *     editors too, unlike `crypto.randomUUID`
     * @returns {string}
     */
    function newSessionId(fillRandom) {
        const bytes = fillRandom(new Uint8Array(16));
        return Array.prototype.map.call(bytes, function (b) {
            return ("0" + b.toString(16)).slice(-2);
        }).join("");
    }

    /**
     * `get(key)` and `set(key, value)` (null removes) over a Web Storage that may refuse to work (private browsing,
     * storage disabled): then nothing is remembered beyond the page.
     *
     * @param {function(): Storage} getStorage e.g. `() => window.localStorage` (reading it may throw too)
     * @returns {{get: function(string): ?string, set: function(string, ?string)}}
     */
    function safeStorage(getStorage) {
        return {
            get: function (key) {
                try {
                    return getStorage().getItem(key);
                } catch {
                    return null;
                }
            },
            set: function (key, value) {
                try {
                    if (value === null) {
                        getStorage().removeItem(key);
                    } else {
                        getStorage().setItem(key, value);
                    }
                } catch {
                    // Storage refused: the session simply lasts until the page is reloaded.
                }
            }
        };
    }

    /**
     * The open conversation of one editor user. Opens the remembered session, or starts a new one.
     *
     * @param {object} options
     * @param {{get: function(string): ?string, set: function(string, ?string)}} options.storage see safeStorage
     * @param {string} [options.username]
     * @param {function(Uint8Array): Uint8Array} options.fillRandom
     */
    function Conversation(options) {
        this.storage = options.storage;
        this.fillRandom = options.fillRandom;
        this.sessionKey = userKey(SESSION_KEY, options.username);
        this.newSessionKey = userKey(NEW_SESSION_KEY, options.username);
        this.sessionId = this.storage.get(this.sessionKey);
        if (!this.sessionId) {
            this.start();
        }
    }

    /** Open a new session: a fresh id, remembered as not saved yet. */
    Conversation.prototype.start = function () {
        this.sessionId = newSessionId(this.fillRandom);
        this.storage.set(this.sessionKey, this.sessionId);
        this.storage.set(this.newSessionKey, this.sessionId);
    };

    /** Open a saved session (one the service listed). */
    Conversation.prototype.open = function (sessionId) {
        this.sessionId = sessionId;
        this.storage.set(this.sessionKey, sessionId);
        this.markSaved();
    };

    /** Whether the open session is one this sidebar started and the service has not saved yet. */
    Conversation.prototype.isUnsaved = function () {
        return this.storage.get(this.newSessionKey) === this.sessionId;
    };

    /** The service saved the open session (an answer came, or the session list names it). */
    Conversation.prototype.markSaved = function () {
        if (this.isUnsaved()) {
            this.storage.set(this.newSessionKey, null);
        }
    };

    /**
     * Where the unsent question of one conversation is kept: per Node-RED user and session.
     *
     * @param {string} sessionId
     * @param {string} [username]
     * @returns {string} the localStorage key
     */
    function draftKey(sessionId, username) {
        return userKey(DRAFT_KEY, username) + ":" + sessionId;
    }

    /**
     * Keep (or, when empty or too long, forget) the unsent question of a conversation.
     *
     * @param {{set: function(string, ?string)}} storage see safeStorage
     * @param {string} sessionId
     * @param {string} [username]
     * @param {string} text what the input holds
     */
    function saveDraft(storage, sessionId, username, text) {
        text = String(text || "");
        storage.set(draftKey(sessionId, username), text.trim() && text.length <= MAX_DRAFT_CHARS ? text : null);
    }

    /**
     * The unsent question of a conversation, or "".
     *
     * @param {{get: function(string): ?string}} storage see safeStorage
     * @param {string} sessionId
     * @param {string} [username]
     * @returns {string}
     */
    function loadDraft(storage, sessionId, username) {
        return storage.get(draftKey(sessionId, username)) || "";
    }

    /**
     * How long to wait before reading the session list again, when a saved session is not listed yet.
     *
     * @param {number} attempt 0 for the first retry
     * @returns {(number|undefined)} milliseconds, or undefined once there is no retry left
     */
    function refreshDelay(attempt) {
        return SESSION_REFRESH_DELAYS_MS[attempt];
    }

    return {
        SESSION_KEY: SESSION_KEY,
        NEW_SESSION_KEY: NEW_SESSION_KEY,
        SESSION_REFRESH_DELAYS_MS: SESSION_REFRESH_DELAYS_MS,
        DRAFT_KEY: DRAFT_KEY,
        MAX_DRAFT_CHARS: MAX_DRAFT_CHARS,
        userKey: userKey,
        draftKey: draftKey,
        saveDraft: saveDraft,
        loadDraft: loadDraft,
        newSessionId: newSessionId,
        safeStorage: safeStorage,
        refreshDelay: refreshDelay,
        Conversation: Conversation
    };
}));
