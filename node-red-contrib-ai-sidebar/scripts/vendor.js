#!/usr/bin/env node
/**
 * Copy the browser builds of marked, DOMPurify, highlight.js and jsdiff from node_modules into resources/vendor/, with
 * their licences.
 *
 * The sidebar must work offline and behind strict networks, so the editor loads these from the package's own
 * `resources/` folder (served by Node-RED at `resources/node-red-contrib-ai-sidebar/...`), never from a CDN.
 *
 * Each build is wrapped so that it registers as `NodeRedAiSidebar.vendor.<name>` instead of assigning the
 * globals `marked` / `DOMPurify` / `hljs`: the Node-RED editor ships its own (older) marked and DOMPurify and relies
 * on those globals, and overwriting them would change how the editor renders node help; `hljs` is kept out of the
 * global scope too, so another plugin's highlight.js and ours never replace each other.
 *
 * highlight.js comes from `@highlightjs/cdn-assets`, the highlight.js project's own npm package of its prebuilt
 * browser files: `highlight.min.js` there is the "common languages" build (json, javascript, yaml, bash, python,
 * sql and about thirty more), the same set `require("highlight.js/lib/common")` gives in Node. It is a
 * devDependency: only that one file is shipped, in resources/vendor/.
 *
 * Usage:
 *   npm run vendor              write resources/vendor/
 *   npm run vendor -- --check   exit 1 if resources/vendor/ differs from what would be written
 */
"use strict";

const fs = require("fs");
const path = require("path");

const packageRoot = path.join(__dirname, "..");
const vendorDir = path.join(packageRoot, "resources", "vendor");

const LIBRARIES = [
    { name: "marked", package: "marked", build: "lib/marked.umd.js", output: "marked.js",
        license: "LICENSE", licenseOutput: "marked.LICENSE.md" },
    { name: "DOMPurify", package: "dompurify", build: "dist/purify.min.js", output: "purify.js",
        license: "LICENSE", licenseOutput: "dompurify.LICENSE" },
    { name: "hljs", package: "@highlightjs/cdn-assets", build: "highlight.min.js", output: "highlight.js",
        license: "LICENSE", licenseOutput: "highlight.js.LICENSE" },
    // jsdiff: the line diff of a code property (a function node's func) on the approval card.
    { name: "Diff", package: "diff", build: "dist/diff.min.js", output: "diff.js",
        license: "LICENSE", licenseOutput: "diff.LICENSE" }
];

function packageDir(name) {
    // Not require.resolve(name + "/package.json"): dompurify's "exports" map does not expose package.json.
    const found = require.resolve.paths(name).concat([path.join(packageRoot, "node_modules")])
        .map(function (dir) { return path.join(dir, name); })
        .find(function (dir) { return fs.existsSync(path.join(dir, "package.json")); });
    if (!found) {
        throw new Error("Cannot find " + name + " in node_modules: run npm install in " + packageRoot);
    }
    return found;
}

function wrap(library, version, source) {
    const code = source.replace(/^\/\/# sourceMappingURL=.*$/m, "").trimEnd();
    return [
        "/* " + library.package + " " + version + " (" + library.build + "), copied by scripts/vendor.js; do not edit.",
        " * Wrapped so it registers as NodeRedAiSidebar.vendor." + library.name +
            " and leaves the editor's own global untouched. */",
        "(function (root) {",
        "var module = { exports: {} }, exports = module.exports, define;",
        code,
        ";root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};",
        "root.NodeRedAiSidebar.vendor = root.NodeRedAiSidebar.vendor || {};",
        "root.NodeRedAiSidebar.vendor." + library.name + " = module.exports;",
        "}(typeof self !== \"undefined\" ? self : this));",
        ""
    ].join("\n");
}

function expectedFiles() {
    const files = {};
    LIBRARIES.forEach(function (library) {
        const dir = packageDir(library.package);
        const version = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
        const source = fs.readFileSync(path.join(dir, library.build), "utf8");
        files[library.output] = wrap(library, version, source);
        files[library.licenseOutput] = fs.readFileSync(path.join(dir, library.license), "utf8");
    });
    return files;
}

function main(argv) {
    const check = argv.indexOf("--check") !== -1;
    const files = expectedFiles();
    let stale = [];
    if (!check) {
        fs.mkdirSync(vendorDir, { recursive: true });
    }
    Object.keys(files).forEach(function (name) {
        const target = path.join(vendorDir, name);
        if (check) {
            const current = fs.existsSync(target) ? fs.readFileSync(target, "utf8") : null;
            if (current !== files[name]) {
                stale.push(path.relative(packageRoot, target));
            }
        } else {
            fs.writeFileSync(target, files[name]);
            console.log("wrote " + path.relative(packageRoot, target));
        }
    });
    if (stale.length) {
        console.error("resources/vendor is out of date (run npm run vendor): " + stale.join(", "));
        return 1;
    }
    return 0;
}

process.exitCode = main(process.argv.slice(2));
