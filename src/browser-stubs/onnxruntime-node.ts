/** Browser stand-in for onnxruntime-node (edgearmor/vite aliases it): the engine selects the 'node' backend only in Node. */
throw new Error('onnxruntime-node is not available in a browser; use backend "wasm" or "webgpu".');
export {};
