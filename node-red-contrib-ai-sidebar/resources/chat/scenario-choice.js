/**
 * The scenario picker's choices (GET ai-sidebar/scenarios: `{language, scenarios: {key: {name, description,
 * keywords[], tools[], prompts[]}}}`, the service being their single source) and the quick-start questions of
 * the chosen one.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.scenarioChoice`) and in Node.js by the
 * package's tests (`require`). Nothing here touches the DOM or `RED`.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.scenarioChoice = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const STORAGE_KEY = "node-red-contrib-ai-sidebar.scenario";
    // Quick-start questions shown while the chat is empty.
    const QUICK_PROMPTS = 3;

    /**
     * The options of the picker, in the service's order, and the one to select.
     *
     * @param {*} scenarios the `scenarios` of the answer
     * @param {?string} wanted the key chosen on screen, else the one remembered
     * @returns {?{options: {key: string, name: string, title: string}[], selected: ?string}} null when the answer
     *     holds no scenario (the picker stays hidden); `selected` is `wanted` when the service still has it
     */
    function options(scenarios, wanted) {
        if (!scenarios || typeof scenarios !== "object" || !Object.keys(scenarios).length) {
            return null;
        }
        return {
            options: Object.keys(scenarios).map(function (key) {
                const scenario = scenarios[key] || {};
                return { key: key, name: String(scenario.name || key), title: String(scenario.description || "") };
            }),
            selected: wanted && Object.prototype.hasOwnProperty.call(scenarios, wanted) ? wanted : null
        };
    }

    /**
     * The first quick-start questions of a scenario.
     *
     * @param {object} scenarios
     * @param {?string} key
     * @returns {string[]}
     */
    function quickPrompts(scenarios, key) {
        const scenario = (key && Object.prototype.hasOwnProperty.call(scenarios, key) && scenarios[key]) || {};
        return Array.isArray(scenario.prompts) ? scenario.prompts.slice(0, QUICK_PROMPTS).map(String) : [];
    }

    return { STORAGE_KEY: STORAGE_KEY, QUICK_PROMPTS: QUICK_PROMPTS, options: options, quickPrompts: quickPrompts };
}));
