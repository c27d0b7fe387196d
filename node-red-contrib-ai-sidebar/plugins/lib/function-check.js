/**
 * Checks of function node code before the user accepts a proposal (issue 20, contracts20 `function-check`).
 *
 * The code is parsed the way Node-RED runs it: the function node puts On Message (and On Start, On Stop) inside an
 * async function body (`@node-red/nodes/core/function/10-function.js`), so top-level `return` and `await` are
 * allowed. The parser is acorn (https://github.com/acornjs/acorn), walked with acorn-walk.
 *
 * Problems, each `{code, message, line?, column?, part}` (line 1-based and column 0-based in the part's own text):
 * - `syntax_error`: acorn's message.
 * - `require_not_in_setup`: `require(x)` with a string x that is not a module of the Setup tab. The function node has no
 *   `require` at all: a module is used through the variable the Setup tab binds it to.
 * - `async_without_done`: `node.send` inside a callback or promise handler while the code never calls
 *   `node.done()`: Node-RED then considers the message handled when the function returns, before the send.
 * - `sandbox_escape`: a reference to `process`, `globalThis`, `require` (other than a call flagged above) or
 *   `global` other than the function node's global context (`global.get`, `global.set`, `global.keys`), or a
 *   dynamic `import()`: what a function node must not reach for, and what the sandbox refuses to run.
 */
"use strict";

const acorn = require("acorn");
const walk = require("acorn-walk");

const PARTS = ["onMessage", "onStart", "onStop"];
// Node-RED's wrapper puts the body on the line after the function's head; parse positions are shifted back by it.
const WRAPPER_HEAD = "(async function (msg, __send__, __done__) {\n";
const WRAPPER_TAIL = "\n})";
const ESCAPES = new Set(["process", "global", "globalThis", "require"]);
// In a function node `global` is the global context; only its own methods are allowed.
const GLOBAL_CONTEXT_METHODS = new Set(["get", "set", "keys"]);

/**
 * Parse one part as Node-RED wraps it.
 *
 * @param {string} text the part's code
 * @returns {{ast: ?object, problem: ?{message: string, line: number, column: number}}}
 */
function parse(text) {
    try {
        const ast = acorn.parse(WRAPPER_HEAD + text + WRAPPER_TAIL, {
            ecmaVersion: "latest", sourceType: "script", locations: true
        });
        return { ast: ast, problem: null };
    } catch (err) {
        const loc = err.loc || { line: 1, column: 0 };
        // acorn appends "(line:column)" of the wrapped text; the position is given separately.
        const message = String(err.message).replace(/\s*\(\d+:\d+\)$/, "");
        return { ast: null, problem: { message: message, line: Math.max(1, loc.line - 1), column: loc.column } };
    }
}

/** Whether `node` is `node.<name>` (a member of the function node's `node` object). */
function isNodeMember(node, name) {
    return node && node.type === "MemberExpression" && !node.computed && node.object.type === "Identifier" &&
        node.object.name === "node" && node.property.type === "Identifier" && node.property.name === name;
}

/**
 * Whether the identifier at the end of `ancestors` is a reference (not a property name, a key or a label).
 *
 * @param {object[]} ancestors acorn-walk's ancestor list, the identifier last
 * @returns {boolean}
 */
function isReference(ancestors) {
    const node = ancestors[ancestors.length - 1];
    const parent = ancestors[ancestors.length - 2];
    if (!parent) {
        return true;
    }
    if (node.name === "global" && parent.type === "MemberExpression" && parent.object === node && !parent.computed &&
            GLOBAL_CONTEXT_METHODS.has(parent.property.name)) {
        return false;
    }
    if (parent.type === "MemberExpression" && parent.property === node && !parent.computed) {
        return false;
    }
    if ((parent.type === "Property" || parent.type === "MethodDefinition" || parent.type === "PropertyDefinition") &&
            parent.key === node && !parent.computed) {
        return parent.type === "Property" && parent.shorthand && parent.value === node;
    }
    return !["LabeledStatement", "BreakStatement", "ContinueStatement"].includes(parent.type);
}

/** The string a `require(...)` call names, or null when its argument is no string literal. */
function requiredModule(call) {
    const arg = call.arguments[0];
    if (arg && arg.type === "Literal" && typeof arg.value === "string") {
        return arg.value;
    }
    if (arg && arg.type === "TemplateLiteral" && arg.expressions.length === 0) {
        return arg.quasis[0].value.cooked;
    }
    return null;
}

/** Whether the identifier at the end of `ancestors` is the callee of `require(<string>)` (flagged as a call). */
function isNamedRequire(ancestors) {
    const node = ancestors[ancestors.length - 1];
    const parent = ancestors[ancestors.length - 2];
    return node.name === "require" && parent && parent.type === "CallExpression" && parent.callee === node &&
        requiredModule(parent) !== null;
}

/**
 * Check one part.
 *
 * @param {string} part "onMessage", "onStart" or "onStop"
 * @param {string} text its code
 * @param {Map<string, string>} modules the Setup tab's modules: module name → variable
 * @returns {object[]} problems
 */
function checkPart(part, text, modules) {
    const problems = [];
    const parsed = parse(text);
    if (!parsed.ast) {
        problems.push(Object.assign({ code: "syntax_error", part: part }, parsed.problem));
        return problems;
    }
    const where = function (node) {
        return { line: node.loc.start.line - 1, column: node.loc.start.column };
    };
    let doneCalled = false;
    let lateSend = null;
    walk.fullAncestor(parsed.ast, function (node, state, ancestors) {
        if (node.type === "CallExpression" && node.callee.type === "Identifier" && node.callee.name === "require") {
            const name = requiredModule(node);
            if (name !== null && modules.has(name)) {
                const lib = modules.get(name);
                problems.push(Object.assign({
                    code: "sandbox_escape", part: part,
                    message: "require(\"" + name + "\"): the function node has no require; the Setup tab binds \"" +
                        name + "\" to the variable " + lib + ": use that."
                }, where(node)));
            } else if (name !== null) {
                problems.push(Object.assign({
                    code: "require_not_in_setup", part: part,
                    message: "require(\"" + name + "\"): the function node has no require. Add the module \"" + name +
                        "\" on the Setup tab and use the variable it is bound to."
                }, where(node)));
            }
        } else if (node.type === "CallExpression" && isNodeMember(node.callee, "done")) {
            doneCalled = true;
        } else if (node.type === "CallExpression" && isNodeMember(node.callee, "send") && !lateSend) {
            // ancestors[0] is the Program, [1..] Node-RED's wrapper: a function deeper than the wrapper is a callback.
            const nested = ancestors.slice(0, -1).filter(function (a) {
                return a.type === "FunctionExpression" || a.type === "ArrowFunctionExpression" ||
                    a.type === "FunctionDeclaration";
            }).length > 1;
            if (nested) {
                lateSend = node;
            }
        } else if (node.type === "ImportExpression") {
            problems.push(Object.assign({
                code: "sandbox_escape", part: part,
                message: "import(): a function node cannot load modules; add them on the Setup tab instead."
            }, where(node)));
        } else if (node.type === "Identifier" && ESCAPES.has(node.name) && !isNamedRequire(ancestors) &&
                isReference(ancestors)) {
            problems.push(Object.assign({
                code: "sandbox_escape", part: part,
                message: node.name + ": a function node must not use " + node.name + " (the Node-RED process and " +
                    "its globals); use msg, node, context, flow, global.get/set, env.get and the Setup tab's modules."
            }, where(node)));
        }
    });
    if (lateSend && !doneCalled) {
        problems.push(Object.assign({
            code: "async_without_done", part: part,
            message: "node.send is called from a callback or a promise, but the code never calls node.done(): " +
                "Node-RED then treats the message as handled when the function returns, before this send. " +
                "Call node.done() after the last node.send()."
        }, where(lateSend)));
    }
    problems.sort(function (a, b) {
        return (a.line - b.line) || (a.column - b.column);
    });
    return problems;
}

/**
 * Check the code parts of a function node.
 *
 * @param {{onMessage?: string, onStart?: string, onStop?: string}} code
 * @param {Array<{var: string, module: string}>} [libs] the Setup tab's modules
 * @returns {object[]} problems of all parts, On Message first ([] when fine)
 */
function checkFunction(code, libs) {
    const modules = new Map();
    for (const lib of libs || []) {
        if (lib && typeof lib.module === "string") {
            modules.set(lib.module, String(lib.var));
        }
    }
    const problems = [];
    for (const part of PARTS) {
        if (code && typeof code[part] === "string" && code[part].trim()) {
            problems.push.apply(problems, checkPart(part, code[part], modules));
        }
    }
    return problems;
}

module.exports = { checkFunction: checkFunction, PARTS: PARTS };
