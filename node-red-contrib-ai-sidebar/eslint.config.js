/**
 * ESLint flat config for the palette package (`npm run lint`, `make lint`): ESLint's own recommended rules
 * (@eslint/js) on every script we write, with the globals of the place it runs in.
 *
 * - Runtime, tests and scripts run in Node.js as CommonJS.
 * - The scripts under `resources/` (one folder per feature) run in the Node-RED editor, whose globals (`RED`, jQuery
 *   as `$` and `jQuery`) they use; the
 *   pure ones are UMD and also `require`d by the tests, hence `module`.
 * - The `<script type="text/javascript">` blocks of the editor's HTML files (node definitions, the sidebar) are
 *   linted by eslint-plugin-html with the editor's globals; `text/html` blocks (templates, help) are not JavaScript.
 * - `resources/vendor/` holds third-party builds copied by scripts/vendor.js: not ours to lint.
 */
"use strict";

const js = require("@eslint/js");
const globals = require("globals");
const html = require("eslint-plugin-html");

const EDITOR_GLOBALS = Object.assign({}, globals.browser, {
    RED: "readonly",
    $: "readonly",
    jQuery: "readonly"
});

module.exports = [
    { ignores: ["node_modules/", "resources/vendor/"] },
    {
        linterOptions: { reportUnusedDisableDirectives: "error" }
    },
    {
        files: ["**/*.js"],
        ...js.configs.recommended,
        languageOptions: {
            sourceType: "commonjs",
            globals: globals.node
        }
    },
    {
        files: ["test/**/*.js"],
        languageOptions: { globals: Object.assign({}, globals.node, globals.mocha) }
    },
    {
        files: ["resources/**/*.js"],
        languageOptions: {
            sourceType: "script",
            // `module` only for the UMD wrappers' `module.exports` branch, taken when the tests require the file.
            globals: Object.assign({}, EDITOR_GLOBALS, { module: "readonly" })
        }
    },
    {
        files: ["nodes/*.html", "plugins/*.html"],
        plugins: { html },
        ...js.configs.recommended,
        languageOptions: {
            sourceType: "script",
            globals: EDITOR_GLOBALS
        }
    }
];
