// Review part by part (issue 36) in headless Debian Chromium at 1280×720, the sidebar narrowed to 240 px: the card
// of a 12-part change, three parts unticked with the keyboard (Space on each checkbox), Approve pressed with Enter,
// the ticked parts applied in the editor as one undo step, and one Ctrl-Z taking all of it back. Reports what the
// user saw as one JSON line on stdout.
// Input (env): EDITOR_URL, TAB_ID, OUT_DIR, USERNAME + PASSWORD (none: no adminAuth), QUESTION, UNTICK (a text
// the labels of the parts to untick contain). The nodes' boxes (RED.nodes x/y/w/h) before and after show where the
// new ones were placed.
// Waits for a state are bounded at 60 s: a resumed approval took longer than 10 s beside make test's other passes.
"use strict";
const editor = require("./editor");

const env = process.env;
const VIEWPORT = { width: 1280, height: 720 };

async function canvasState(page, tabId) {
    return page.evaluate((id) => ({
        names: RED.nodes.filterNodes({ z: id }).map((n) => n.name || n.type).sort(),
        links: RED.nodes.filterLinks({}).filter((l) => l.source.z === id)
            .map((l) => (l.source.name || l.source.type) + "->" + (l.target.name || l.target.type)).sort(),
        historyDepth: RED.history.depth(),
        dirty: RED.nodes.dirty(),
        // Where the editor drew each node: centre x/y, width and height as it measured them.
        boxes: RED.nodes.filterNodes({ z: id }).map((n) => ({ id: n.id, name: n.name || n.type, x: n.x, y: n.y,
            w: n.w, h: n.h }))
    }), tabId);
}

async function partsMode(context, result) {
    const page = await editor.openEditor(context, env.EDITOR_URL, result,
        env.USERNAME ? { username: env.USERNAME, password: env.PASSWORD } : null);
    await editor.showTab(page, env.TAB_ID);
    result.width = await editor.sidebarWidth(page);
    result.narrowWidth = await editor.resizeSidebar(page, 240);
    await editor.newChat(page);
    await editor.waitIdle(page);
    await page.fill(".ai-sidebar-input", env.QUESTION);
    await page.click(".ai-sidebar-send");
    await page.waitForSelector(".ai-sidebar-approval .ai-sidebar-approval-part", { timeout: 30000 });
    await editor.waitIdle(page);
    const card = page.locator(".ai-sidebar-approval").last();
    const boxes = card.locator(".ai-sidebar-approval-part-list li");
    result.labels = (await boxes.allInnerTexts()).map((text) => text.trim());
    result.before = await canvasState(page, env.TAB_ID);
    // Untick with the keyboard: each checkbox focused, Space toggles it.
    const count = await boxes.count();
    for (let i = 0; i < count; i++) {
        const item = boxes.nth(i);
        if ((await item.innerText()).includes(env.UNTICK)) {
            await item.locator("input").focus();
            await page.keyboard.press("Space");
        }
    }
    result.ticked = await card.locator(".ai-sidebar-approval-part:checked").count();
    result.approveLabel = (await card.locator(".ai-sidebar-approval-approve").innerText()).trim();
    result.fitsWidth = await card.evaluate((el) => el.scrollWidth <= el.clientWidth + 1 &&
        el.getBoundingClientRect().right <= document.querySelector("#red-ui-sidebar").getBoundingClientRect().right + 1);
    await editor.detailScreenshot(card, result, "sidebar-approval-parts-narrow.png");
    await card.locator(".ai-sidebar-approval-approve").focus();
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-approval-sent"), null, { timeout: 60000 });
    await editor.waitIdle(page);
    await page.waitForSelector(".ai-sidebar-tool-applied", { timeout: 60000 });
    result.after = await canvasState(page, env.TAB_ID);
    result.applied = (await page.locator(".ai-sidebar-tool-applied").allInnerTexts()).map((text) => text.trim());
    await editor.screenshot(page, result, "sidebar-approval-parts-applied.png");
    const chart = await page.locator("#red-ui-workspace-chart").boundingBox();
    await page.mouse.click(chart.x + 15, chart.y + chart.height - 30);
    await page.keyboard.press("Control+z");
    await page.waitForFunction((depth) => RED.history.depth() === depth, result.before.historyDepth,
        { timeout: 60000 });
    result.undone = await canvasState(page, env.TAB_ID);
    result.restoredWidth = await editor.resizeSidebar(page, result.width);
}

async function main() {
    const result = {};
    const { context, browser } = await editor.launch(VIEWPORT);
    try {
        await partsMode(context, result);
    } catch (err) {
        result.failure = String(err && err.stack || err);
    } finally {
        await browser.close();
    }
    process.stdout.write(JSON.stringify(result) + "\n");
}

main();
