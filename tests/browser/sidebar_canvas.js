// The canvas write tools (issue 36) approved in the sidebar and applied into the editor, in headless Debian
// Chromium at 1280×720; reports what the user saw as one JSON line on stdout.
// Input (env): EDITOR_URL, TAB_ID, SCENARIO, OUT_DIR, USERNAME + PASSWORD, WATCH (JSON: ids of nodes to report), QUESTIONS
// (JSON: one question a round; the scripted model answers each with one write tool call).
// Each round: the question in a new chat, its card approved, the editor's state after it (one more undo step,
// undeployed), then one Ctrl-Z on the canvas and the state again.
// Waits for a state are bounded at 60 s: a resumed approval took longer than 10 s beside make test's other passes.
"use strict";
const editor = require("./editor");

const env = process.env;
const VIEWPORT = { width: 1280, height: 720 };

/** The open tab's state, the watched nodes' disabled/group/name, the groups on the tab, the undo depth. */
async function canvasState(page) {
    return page.evaluate(({ tabId, watch }) => {
        const tab = RED.nodes.workspace(tabId);
        const nodes = {};
        const drawn = {};
        watch.forEach((id) => {
            const node = RED.nodes.node(id) || RED.nodes.group(id);
            nodes[id] = node ? { d: node.d === true, g: node.g || null, name: node.name || "", z: node.z } : null;
            drawn[id] = node ? { x: node.x, y: node.y, at: (document.getElementById(id) || { getAttribute: () => null })
                .getAttribute("transform") } : null;
        });
        return {
            tab: { label: tab.label, disabled: !!tab.disabled,
                   headerDisabled: document.querySelector("#red-ui-tab-" + tabId.replace(".", "-"))
                       .classList.contains("red-ui-workspace-disabled") },
            nodes: nodes,
            drawn: drawn,
            groups: RED.nodes.groups(tabId).map((g) => ({ id: g.id, name: g.name || "",
                                                          nodes: g.nodes.map((n) => n.id) })),
            // Subflow definitions, and the subflow instances on the tab (create_subflow, add_subflow_instance).
            subflows: (() => {
                const found = [];
                RED.nodes.eachSubflow((sf) => found.push({ id: sf.id, name: sf.name || "", inputs: sf.in.length,
                                                           outputs: sf.out.length }));
                return found;
            })(),
            instances: RED.nodes.filterNodes({ z: tabId }).filter((n) => n.type.indexOf("subflow:") === 0)
                .map((n) => ({ id: n.id, type: n.type, x: n.x, y: n.y })),
            historyDepth: RED.history.depth(),
            dirty: RED.nodes.dirty()
        };
    }, { tabId: env.TAB_ID, watch: JSON.parse(env.WATCH) });
}

async function keyOnCanvas(page, key) {
    // A click on an empty spot of the canvas, as a user would, so that the key reaches the editor.
    const chart = await page.locator("#red-ui-workspace-chart").boundingBox();
    await page.mouse.click(chart.x + 15, chart.y + chart.height - 30);
    await page.keyboard.press(key);
}

editor.runEditorScript(async (page, result) => {
    await editor.showTab(page, env.TAB_ID);
    // The scenario that offers the canvas tools (locales/scenarios.json).
    await page.waitForSelector(".ai-sidebar-scenario", { state: "visible", timeout: 60000 });
    await page.selectOption(".ai-sidebar-scenario", env.SCENARIO);
    result.rounds = [];
    for (const [number, question] of JSON.parse(env.QUESTIONS).entries()) {
        const round = { before: await canvasState(page) };
        await editor.newChat(page);
        await editor.waitIdle(page);
        await page.fill(".ai-sidebar-input", question);
        await page.click(".ai-sidebar-send");
        await page.waitForSelector(".ai-sidebar-approval .ai-sidebar-approval-approve", { timeout: 30000 })
            .catch(async (err) => {
                result.transcript = await editor.transcript(page);  // what the sidebar showed instead
                await editor.screenshot(page, result, `sidebar-canvas-${number}-no-card.png`);
                throw err;
            });
        await editor.waitIdle(page);
        round.card = (await page.locator(".ai-sidebar-approval").last().innerText()).trim();
        round.approveTitle = await page.locator(".ai-sidebar-approval").last()
            .locator(".ai-sidebar-approval-approve").getAttribute("title");
        await page.locator(".ai-sidebar-approval").last().locator(".ai-sidebar-approval-approve").click();
        await page.waitForFunction(() => document.querySelector(".ai-sidebar-approval-sent"), null,
            { timeout: 60000 });
        await editor.waitIdle(page);
        await page.waitForFunction((depth) => RED.history.depth() > depth, round.before.historyDepth,
            { timeout: 60000 }).catch(async (err) => {
            result.transcript = await editor.transcript(page);  // what the sidebar said instead of applying it
            await editor.screenshot(page, result, `sidebar-canvas-${number}-not-applied.png`);
            throw err;
        });
        round.applied = (await page.locator(".ai-sidebar-tool-applied").last().innerText()).trim();
        round.after = await canvasState(page);
        await editor.screenshot(page, result, `sidebar-canvas-${number}-applied.png`);
        await keyOnCanvas(page, "Control+z");
        await page.waitForFunction((depth) => RED.history.depth() === depth, round.before.historyDepth,
            { timeout: 60000 });
        round.undone = await canvasState(page);
        await editor.screenshot(page, result, `sidebar-canvas-${number}-undone.png`);
        result.rounds.push(round);
    }
}, { viewport: VIEWPORT });
