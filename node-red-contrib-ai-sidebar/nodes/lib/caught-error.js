/**
 * The `ai-chat` node in a flow's catch path: the error a `catch` node caught (`msg.error`, Node-RED's
 * https://nodered.org/docs/user-guide/handling-errors) as the `error` of a stream-chat request, and the question
 * asked about it when the flow sets none.
 *
 * Only the error itself goes to the service: `message`, `code`, `source` (`id`, `type`, `name`) and `stack`, cut to
 * the service's limits (`service/web/schemas.py`, `CaughtError`). The rest of the message (its payload, headers,
 * anything the failed node was handling) never does; the service redacts secret-looking text in what does.
 */
"use strict";

const MESSAGE_CHARS = 4000;   // the service accepts 5,000
const STACK_CHARS = 8000;     // the service accepts 10,000
const CODE_CHARS = 200;
const TYPE_CHARS = 200;
const NAME_CHARS = 500;
const ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;  // the service's ID_PATTERN
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

// The question asked about a caught error without msg.question, in the languages the service ships.
const DEFAULT_QUESTIONS = {
    "en-US": "Explain this error and how to fix it.",
    de: "Erkläre diesen Fehler und wie ich ihn behebe.",
    "es-ES": "Explica este error y cómo solucionarlo.",
    fr: "Explique cette erreur et comment la corriger.",
    ja: "このエラーの原因と直し方を説明してください。",
    ko: "이 오류의 원인과 해결 방법을 설명해 주세요.",
    "pt-BR": "Explique este erro e como corrigi-lo.",
    ru: "Объясни эту ошибку и как её исправить.",
    "zh-CN": "解释这个错误的原因以及如何修复它。",
    "zh-TW": "解釋這個錯誤的原因以及如何修正它。"
};
const BY_PRIMARY = { en: "en-US", de: "de", es: "es-ES", fr: "fr", ja: "ja", ko: "ko", pt: "pt-BR", ru: "ru" };

/**
 * @param {*} value
 * @param {number} limit
 * @returns {string|undefined} value as text of at most `limit` characters (code points, as the service counts
 *     them; a lone surrogate, which the service's JSON parser refuses, replaced by U+FFFD), or undefined when it is
 *     missing or empty
 */
function text(value, limit) {
    if (value === undefined || value === null || typeof value === "object" || typeof value === "function") {
        return undefined;
    }
    const whole = String(value);
    if (!whole) {
        return undefined;
    }
    return Array.from(whole.replace(LONE_SURROGATE, "\uFFFD")).slice(0, limit).join("");
}

/**
 * The caught error of a message as the request's `error`, or null when the message carries none (no `msg.error`
 * object with a `message`).
 *
 * @param {object} msg
 * @returns {{message: string, code?: string, source?: {id?: string, type?: string, name?: string},
 *     stack?: string}|null}
 */
function fromMessage(msg) {
    const error = msg && msg.error;
    if (!error || typeof error !== "object") {
        return null;
    }
    const message = text(error.message, MESSAGE_CHARS);
    if (message === undefined) {
        return null;
    }
    const caught = { message: message };
    const code = text(error.code, CODE_CHARS);
    if (code !== undefined) {
        caught.code = code;
    }
    const source = error.source;
    if (source && typeof source === "object") {
        const described = {};
        const id = text(source.id, 128);
        if (id !== undefined && ID_PATTERN.test(id)) {
            described.id = id;
        }
        const type = text(source.type, TYPE_CHARS);
        if (type !== undefined) {
            described.type = type;
        }
        const name = text(source.name, NAME_CHARS);
        if (name !== undefined) {
            described.name = name;
        }
        if (Object.keys(described).length) {
            caught.source = described;
        }
    }
    const stack = text(error.stack, STACK_CHARS);
    if (stack !== undefined) {
        caught.stack = stack;
    }
    return caught;
}

/**
 * The question asked about a caught error when the flow sets none, in `language` (a tag such as `de` or
 * `zh-TW`; English for an empty or unknown one).
 *
 * @param {string} [language]
 * @returns {string}
 */
function defaultQuestion(language) {
    const tag = String(language || "").trim().toLowerCase();
    const primary = tag.split(/[-_]/)[0];
    let key = BY_PRIMARY[primary] || "en-US";
    if (primary === "zh") {
        key = /^zh[-_](tw|hk|mo|hant)/.test(tag) ? "zh-TW" : "zh-CN";
    }
    return DEFAULT_QUESTIONS[key];
}

module.exports = { fromMessage, defaultQuestion, DEFAULT_QUESTIONS };
