/**
 * `#ort-wasm` (package.json "imports"): onnxruntime-web's Node build under Node, its wasm-only build
 * everywhere else. Both export onnxruntime-web's API.
 */
declare module '#ort-wasm' {
  export * from 'onnxruntime-web';
}
