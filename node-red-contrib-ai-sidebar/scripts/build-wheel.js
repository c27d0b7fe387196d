#!/usr/bin/env node
/**
 * Build the companion service's Python wheel into `python/`, so that the npm package carries it (`npm pack` runs this
 * as `prepack`).
 *
 * A Node-RED user installs this package from the palette manager and may never have cloned the repository: with
 * the wheel inside the package, `python3 -m pip install ~/.node-red/node_modules/node-red-contrib-ai-sidebar/python/
 * node_red_ai_sidebar-<version>-py3-none-any.whl` installs the service (`ai-sidebar-service`) without it.
 *
 * The wheel is built from the repository root (the folder above this package, which must hold the project's
 * pyproject.toml) by `pip wheel --no-deps`, pip's standard isolated PEP 517 build: the build backend pyproject.toml
 * names comes from pip's cache or the package index. pip builds in the source tree, and setuptools reuses its
 * `build/lib` folder there, so a module deleted since an earlier build would still ship: the build runs on a fresh
 * temporary copy of what the wheel is made of (SOURCES) instead. Older wheels in the output folder are removed
 * first, so the package carries exactly one. The Python is `$PYTHON`, else `python3`.
 *
 * Usage: npm pack (or: node scripts/build-wheel.js [output folder, default python/]). Exits with pip's status;
 * 1 outside the repository. tests/test_packaging.py installs and runs the wheel this script builds.
 */
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawnSync } = require("child_process");

const packageRoot = path.join(__dirname, "..");
const repoRoot = path.join(packageRoot, "..");
// What the build reads (pyproject.toml: metadata, readme, packages and the data folders they ship).
const SOURCES = ["pyproject.toml", "README.md", "service", "mcp_server", "locales", "examples"];

function main(outDir) {
    const pyproject = path.join(repoRoot, "pyproject.toml");
    if (!fs.existsSync(pyproject) || !/^name\s*=\s*"node-red-ai-sidebar"/m.test(fs.readFileSync(pyproject, "utf8"))) {
        process.stderr.write("build-wheel: " + pyproject + " is not the node-red-ai-sidebar project; the wheel is " +
            "built from the repository checkout that holds this package.\n");
        return 1;
    }
    fs.mkdirSync(outDir, { recursive: true });
    for (const name of fs.readdirSync(outDir)) {
        if (name.endsWith(".whl")) {
            fs.rmSync(path.join(outDir, name));
        }
    }
    const python = process.env.PYTHON || "python3";
    const source = fs.mkdtempSync(path.join(os.tmpdir(), "ai-sidebar-wheel-"));
    let result;
    try {
        for (const name of SOURCES) {
            fs.cpSync(path.join(repoRoot, name), path.join(source, name), {
                recursive: true,
                filter: function (from) {
                    return path.basename(from) !== "__pycache__";
                }
            });
        }
        // stdout of a lifecycle script would land in `npm pack --json`'s own output: pip writes to stderr only.
        result = spawnSync(python, ["-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check",
            "--wheel-dir", outDir, source], { stdio: ["ignore", process.stderr, "inherit"] });
    } finally {
        fs.rmSync(source, { recursive: true, force: true });
    }
    if (result.error) {
        process.stderr.write("build-wheel: could not run " + python + ": " + result.error.message +
            " (set PYTHON to a Python 3.11+ with pip)\n");
        return 1;
    }
    return result.status === null ? 1 : result.status;
}

process.exitCode = main(path.resolve(process.argv[2] || path.join(packageRoot, "python")));
