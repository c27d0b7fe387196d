// The sidebar's second round (issue 16), driven by sidebar_features.js: the question limit the service states,
// the context of reloaded questions and attached debug messages, the model in the header, conversations (scroll,
// drafts, list, search) and node links in answers. Each mode runs at 1280×720 and with a narrow sidebar.
// Input (env): TAB_ID, QUESTION(S), NARROW_WIDTH, and per mode what its comment says.
"use strict";
const editor = require("./editor");

const env = process.env;

async function counterText(page) {
    return page.evaluate(() => {
        const counter = document.querySelector(".ai-sidebar-counter");
        return counter && counter.offsetParent !== null ? counter.innerText.trim() : null;
    });
}

// The limit on a question comes from the service's scenarios answer (here changed on its way to the editor to
// LIMIT characters); while the service is down the sidebar counts against 10,000.
async function limitMode(page, result) {
    const limit = Number(env.LIMIT);
    await page.route("**/ai-sidebar/scenarios*", async (route) => {
        const response = await route.fetch();
        const body = await response.json();
        result.serviceLimit = body.maxMessageChars;
        await route.fulfill({ response, json: Object.assign({}, body, { maxMessageChars: limit }) });
    });
    await page.reload({ waitUntil: "domcontentloaded" });
    await editor.editorReady(page);
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-scenario option"), null,
        { timeout: 15000 });
    await page.fill(".ai-sidebar-input", "x".repeat(Math.floor(limit * 0.9) - 1));
    result.belowShare = await counterText(page);
    await page.fill(".ai-sidebar-input", "x".repeat(limit + 5));
    result.over = await counterText(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "sidebar-limit-from-service.png");
    await page.fill(".ai-sidebar-input", "");
}

module.exports = { MODES: { "limit": limitMode } };
