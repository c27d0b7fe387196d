"use strict";

const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { builtinModules } = require("module");
const { execFile } = require("child_process");

const packageRoot = path.join(__dirname, "..");
const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot, "package.json"), "utf8"));

/**
 * The bare module names (`"ws"`, `"node:fs"`, `"@scope/pkg/sub"`) that `file` requires, or resolves to run in a
 * process of its own (`require.resolve`: the function sandbox's child).
 */
function requiredNames(file) {
    const source = fs.readFileSync(file, "utf8");
    return Array.from(source.matchAll(/\brequire(?:\.resolve)?\(\s*["']([^"']+)["']\s*\)/g), function (match) {
        return match[1];
    });
}

function packageName(specifier) {
    const parts = specifier.split("/");
    return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/**
 * What Node-RED loads when it installs the package: the `node-red` entry points (nodes and plugins) and every file
 * of the package they require, followed transitively; returns the packages outside it that they require.
 */
function runtimePackages() {
    const entries = Object.values(manifest["node-red"].nodes).concat(Object.values(manifest["node-red"].plugins));
    const pending = entries.map(function (entry) { return path.join(packageRoot, entry); });
    const seen = new Set();
    const packages = new Set();
    while (pending.length) {
        const file = pending.pop();
        if (seen.has(file)) {
            continue;
        }
        seen.add(file);
        requiredNames(file).forEach(function (specifier) {
            if (specifier.startsWith(".")) {
                pending.push(require.resolve(path.resolve(path.dirname(file), specifier)));
            } else if (!specifier.startsWith("node:") && builtinModules.indexOf(packageName(specifier)) === -1) {
                packages.add(packageName(specifier));
            }
        });
    }
    return { files: seen, packages: Array.from(packages).sort() };
}

describe("package manifest", function () {
    it("follows the runtime's requires through the package's own files", function () {
        const files = Array.from(runtimePackages().files, function (file) {
            return path.relative(packageRoot, file);
        }).sort();
        assert.deepStrictEqual(files, ["nodes/ai-chat.js", "nodes/ai-config.js", "nodes/lib/caught-error.js",
            "nodes/lib/chat-client.js", "nodes/lib/mcp-servers.js",
            "plugins/ai-sidebar.js", "plugins/lib/context-route.js", "plugins/lib/function-check.js",
            "plugins/lib/function-routes.js",
            "plugins/lib/function-sandbox.js", "plugins/lib/provider.js", "plugins/lib/relay.js",
            "plugins/lib/sandbox-child.js", "plugins/lib/sandbox-stubs.js", "plugins/lib/service-status.js",
            "plugins/lib/service-token.js",
            "plugins/lib/supervisor.js",
            "resources/shared/sse-parser.js"]);
    });

    it("keeps the editor scripts in one folder per feature, each loaded by the plugin's HTML", function () {
        // Issue 32: resources/ holds a folder per feature (ARCHITECTURE.md names them); only the tab itself stays at
        // the top. A script that is not in the HTML never runs in the editor; one at the top is in no feature.
        const features = ["approval", "assist", "chat", "completion", "config", "conversations", "history",
            "knowledge", "mcp-grants", "mentions", "service-status", "shared"];
        const resources = path.join(packageRoot, "resources");
        const scripts = [];
        const styles = [];
        for (const entry of fs.readdirSync(resources, { withFileTypes: true })) {
            if (entry.isDirectory() && entry.name !== "vendor") {
                assert.ok(features.includes(entry.name), "unexpected folder resources/" + entry.name);
                for (const file of fs.readdirSync(path.join(resources, entry.name))) {
                    (file.endsWith(".css") ? styles : scripts).push(entry.name + "/" + file);
                }
            } else if (entry.isFile() && entry.name.endsWith(".js")) {
                scripts.push(entry.name);
            }
        }
        assert.deepStrictEqual(scripts.filter(function (file) { return !file.includes("/"); }).sort(),
            ["sidebar-tab.js", "sidebar.js"]);
        const html = fs.readFileSync(path.join(packageRoot, "plugins", "ai-sidebar.html"), "utf8");
        const loaded = Array.from(html.matchAll(/src="resources\/node-red-contrib-ai-sidebar\/([^"]+)"/g),
            function (match) { return match[1]; }).filter(function (file) { return !file.startsWith("vendor/"); });
        assert.deepStrictEqual(scripts.slice().sort(), loaded.slice().sort());
        const linked = Array.from(html.matchAll(/href="resources\/node-red-contrib-ai-sidebar\/([^"]+\/[^"]+)"/g),
            function (match) { return match[1]; });
        assert.deepStrictEqual(styles.slice().sort(), linked.slice().sort());
    });

    it("declares as runtime dependencies exactly the packages the runtime requires", function () {
        // marked and DOMPurify reach the editor as vendored copies (resources/vendor, scripts/vendor.js): they are
        // devDependencies, not something an install from the palette manager should fetch.
        assert.deepStrictEqual(Object.keys(manifest.dependencies || {}).sort(), runtimePackages().packages);
    });

    it("keeps the vendored libraries' sources among the devDependencies", function () {
        ["marked", "dompurify", "@highlightjs/cdn-assets", "diff"].forEach(function (name) {
            assert.ok(manifest.devDependencies[name], name);
        });
    });

    it("packs the companion service's wheel, built by prepack, into python/", async function () {
        // pip builds the wheel (a few seconds; longer on a busy machine).
        this.timeout(300000);
        const pyproject = fs.readFileSync(path.join(packageRoot, "..", "pyproject.toml"), "utf8");
        const version = /^version\s*=\s*"([^"]+)"/m.exec(pyproject)[1];
        // --dry-run still runs prepack (npm's documented lifecycle), so the wheel is really built; nothing is written
        // but python/.
        const stdout = await new Promise(function (resolve, reject) {
            execFile("npm", ["pack", "--dry-run", "--json"], { cwd: packageRoot, maxBuffer: 16 * 1024 * 1024 },
                function (err, out, errOut) {
                    if (err) {
                        reject(new Error(err.message + "\n" + errOut));
                    } else {
                        resolve(out);
                    }
                });
        });
        const packed = JSON.parse(stdout)[0].files.map(function (file) { return file.path; });
        const wheel = "python/node_red_ai_sidebar-" + version + "-py3-none-any.whl";
        assert.deepStrictEqual(packed.filter(function (name) { return name.startsWith("python/"); }), [wheel]);
        assert.ok(fs.statSync(path.join(packageRoot, wheel)).size > 0);
        assert.deepStrictEqual(packed.filter(function (name) { return /^(test|node_modules)\//.test(name); }), []);
    });
});
