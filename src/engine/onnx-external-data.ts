/**
 * The external data files an ONNX graph reads: the `location` of every tensor stored outside the graph
 * (initializers, sparse initializers, and tensors in node attributes, subgraphs and functions included).
 *
 * onnxruntime reads these files itself, by the names the graph gives, when the model's data lies in a
 * folder on disk: a verified graph could still name a file the manifest does not pin, so the loader
 * compares these names with the files it verified before creating a session. Field numbers are
 * onnx.proto's; other fields are skipped without decoding.
 */
import protobuf from 'protobufjs/minimal.js';

type ProtoReader = protobuf.Reader;

const LEN = 2;

/** Reads the length-delimited fields of a message that `field` takes; skips the rest. */
function fields(r: ProtoReader, end: number, field: (number: number) => boolean): void {
  while (r.pos < end) {
    const tag = r.uint32();
    if ((tag & 7) !== LEN || !field(tag >>> 3)) r.skipType(tag & 7);
  }
}

function tensor(r: ProtoReader, end: number, out: Set<string>): void {
  fields(r, end, (f) => {
    if (f !== 13) return false; // external_data: StringStringEntryProto {key = 1, value = 2}
    let key = '';
    let value = '';
    fields(r, r.uint32() + r.pos, (e) => {
      if (e === 1) key = r.string();
      else if (e === 2) value = r.string();
      else return false;
      return true;
    });
    if (key === 'location') out.add(value);
    return true;
  });
}

function sparseTensor(r: ProtoReader, end: number, out: Set<string>): void {
  fields(r, end, (f) => (f === 1 || f === 2 ? (tensor(r, r.uint32() + r.pos, out), true) : false));
}

function node(r: ProtoReader, end: number, out: Set<string>): void {
  fields(r, end, (f) => {
    if (f !== 5) return false; // attribute
    fields(r, r.uint32() + r.pos, (a) => {
      const e = () => r.uint32() + r.pos;
      if (a === 5 || a === 10) tensor(r, e(), out); // t, tensors
      else if (a === 6 || a === 11) graph(r, e(), out); // g, graphs
      else if (a === 22 || a === 23) sparseTensor(r, e(), out); // sparse_tensor, sparse_tensors
      else return false;
      return true;
    });
    return true;
  });
}

function graph(r: ProtoReader, end: number, out: Set<string>): void {
  fields(r, end, (f) => {
    const e = () => r.uint32() + r.pos;
    if (f === 1) node(r, e(), out);
    else if (f === 5) tensor(r, e(), out); // initializer
    else if (f === 15) sparseTensor(r, e(), out); // sparse_initializer
    else return false;
    return true;
  });
}

/** The external data locations an ONNX model's tensors name, in no particular order. */
export function externalDataLocations(model: Uint8Array): Set<string> {
  const out = new Set<string>();
  const r = protobuf.Reader.create(model);
  fields(r, model.byteLength, (f) => {
    if (f === 7) graph(r, r.uint32() + r.pos, out);
    else if (f === 25) fields(r, r.uint32() + r.pos, (ff) => (ff === 7 ? (node(r, r.uint32() + r.pos, out), true) : false)); // functions: node
    else return false;
    return true;
  });
  return out;
}
