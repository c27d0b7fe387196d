/**
 * Pure helpers for the sidebar's choice of AI configuration: the service default or one of the deployed
 * `ai-config` nodes that `GET ai-sidebar/configs` lists (`[{id, name, provider, model}]`, never a key).
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.configChoice`) and in Node.js by the
 * package's tests (`require`). Nothing here touches `RED`; the editor part is config-picker.js.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.configChoice = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const STORAGE_KEY = "node-red-contrib-ai-sidebar.configId";

    /**
     * Where the chosen configuration is remembered: per Node-RED user, since several may share one browser.
     *
     * @param {string} [username] the editor user (`RED.settings.user.username`); none without adminAuth
     * @returns {string} the localStorage key
     */
    function storageKey(username) {
        return username ? STORAGE_KEY + ":" + username : STORAGE_KEY;
    }

    function text(value) {
        return typeof value === "string" ? value.trim() : "";
    }

    /**
     * The configurations of a `GET ai-sidebar/configs` answer, each with string fields; entries without an id
     * are dropped, and so is any field other than id, name, provider and model.
     *
     * @param {*} body the parsed answer
     * @returns {{id: string, name: string, provider: string, model: string}[]}
     */
    function normaliseConfigs(body) {
        if (!Array.isArray(body)) {
            return [];
        }
        return body.filter(function (config) {
            return config && typeof config === "object" && text(config.id) !== "";
        }).map(function (config) {
            return { id: text(config.id), name: text(config.name), provider: text(config.provider),
                model: text(config.model) };
        });
    }

    /**
     * The text of a configuration in the picker: its name and "provider/model", as `format` puts them together
     * (a translated "__name__ (__detail__)"); only "provider/model" when the node has no name.
     *
     * @param {{name: string, provider: string, model: string}} config
     * @param {function({name: string, detail: string}): string} format
     * @returns {string}
     */
    function configLabel(config, format) {
        const detail = [config.provider, config.model].filter(Boolean).join("/");
        if (!config.name) {
            return detail;
        }
        return detail ? format({ name: config.name, detail: detail }) : config.name;
    }

    /**
     * What the picker shows once the list is known: the remembered choice while it is deployed, otherwise the
     * service default; but a choice the runtime does not list while the editor's own flows still hold it (`held`)
     * stays chosen, shown as not running: the runtime lists only the nodes it runs, and none run while its flows
     * are stopped (a deploy with a missing node type, safe mode, runtime stopped).
     *
     * @param {?string} savedId the remembered id ("" or null for the service default)
     * @param {{id: string}[]} configs the deployed configurations
     * @param {boolean} [held] the editor's flows hold `savedId` as an ai-config node that is not disabled (or are
     *     not loaded yet)
     * @returns {{id: string, missing: boolean, unlisted: (boolean|undefined)}} `id` is "" for the service default;
     *     `missing` is true when a remembered configuration is no longer deployed; `unlisted` is true for a kept
     *     choice the runtime does not list
     */
    function resolveChoice(savedId, configs, held) {
        if (!savedId) {
            return { id: "", missing: false };
        }
        const found = configs.some(function (config) {
            return config.id === savedId;
        });
        if (found) {
            return { id: savedId, missing: false };
        }
        return held ? { id: savedId, missing: false, unlisted: true } : { id: "", missing: true };
    }

    /**
     * Whether an editor "runtime-state" event (Node-RED's `notification/runtime-state`: `{state: "start"|"stop"|
     * "safe", deploy?, error?}`, or nothing when a warning was cleared; @node-red/runtime lib/flows/index.js) is
     * a moment to read the deployed configurations again. Every deploy sends "stop" and then "start": while stopped
     * no node runs, the list would be empty and a remembered choice would be dropped as no longer deployed.
     *
     * @param {?object} event the event's payload
     * @returns {boolean}
     */
    function refreshesConfigs(event) {
        return !event || !event.state || event.state === "start";
    }

    /**
     * Which model answers the next question: the chosen ai-config node's, or the service's own.
     *
     * @param {string} configId the chosen node ("" for the service default)
     * @param {{id: string, provider: string, model: string}[]} configs the deployed configurations
     * @param {?{provider: string, model: ?string}} serviceModel the `model` of GET ai-sidebar/scenarios (null
     *     until the service answered, or from an older service)
     * @param {?Object<string, ?string>} [defaultModels] the `defaultModels` of GET ai-sidebar/scenarios: the model
     *     a node naming none gets, per provider
     * @returns {?{provider: string, model: string, text: string}} `text` is "provider/model" (or the provider
     *     alone); null while it is not known
     */
    function answeringModel(configId, configs, serviceModel, defaultModels) {
        let source = null;
        if (configId) {
            source = configs.filter(function (config) {
                return config.id === configId;
            })[0] || null;
        } else if (serviceModel && typeof serviceModel === "object") {
            source = serviceModel;
        }
        const provider = source ? text(source.provider) : "";
        if (!provider) {
            return null;
        }
        const model = text(source.model) ||
            (configId && defaultModels && typeof defaultModels === "object" ? text(defaultModels[provider]) : "");
        return { provider: provider, model: model, text: model ? provider + "/" + model : provider };
    }

    return {
        STORAGE_KEY: STORAGE_KEY,
        answeringModel: answeringModel,
        storageKey: storageKey,
        normaliseConfigs: normaliseConfigs,
        configLabel: configLabel,
        resolveChoice: resolveChoice,
        refreshesConfigs: refreshesConfigs
    };
}));
