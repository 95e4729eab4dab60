#!/usr/bin/env node
// kafkajs as an independent oracle for Kafka's on-disk record format (tests/formats/test_kafkajs_oracle.py).
//
// Protocol: JSON Lines. Each stdin line is one request, answered by exactly one stdout line, in order.
// A request is {"op": ..., ...} or {"op": "many", "cmds": [request, ...]} (answered by
// {"ok": true, "results": [answer, ...]}): the test sends many cases in one line, because node starts
// slowly, and because a single line each way cannot deadlock on full pipes.
// Every answer is {"ok": true, ...} or {"ok": false, "error": {"name", "message"}}.
// 64-bit numbers travel as decimal strings, byte strings as base64 (null stays null).
//
// Ops (everything below calls kafkajs's own encoders/decoders, kafkajs/src/protocol/...):
//   info      -> kafkajs version and which codecs loaded ({"codecs": {"gzip": true, "snappy": ...}})
//   encode    -> one v2 batch from recordBatch/v0 RecordBatch + recordBatch/record/v0 Record, with every
//                header field given explicitly: {compression, firstOffset, partitionLeaderEpoch,
//                firstTimestamp, maxTimestamp, lastOffsetDelta, transactional, producerId, producerEpoch,
//                firstSequence, records: [{offsetDelta, timestampDelta, key, value, headers}]}
//   produce   -> the batch kafkajs's producer puts on the wire: requests/produce/v3 encode() for one
//                partition, the batch cut out of the request. {compression, transactionalId, producerId,
//                producerEpoch, firstSequence, messages: [{key, value, timestamp, headers}]}
//   messageset-> an uncompressed v0/v1 message set from messageSet/index.js: {magic, entries: [{key, value,
//                timestamp}]}
//   decode    -> {bytes (base64) | path}: walks the log entries; each entry goes to kafkajs's decoder for
//                its magic (recordBatch/v0/decoder for 2, messageSet/decoder for 0/1). With "fetch": true
//                also the offsets and timestamps of the flat record list that requests/fetch/v4/decodeMessages
//                (kafkajs's real fetch path) makes of the whole buffer.
// headers travel as [[key, [value, ...]], ...]: kafkajs represents them as an object {key: value | [values]}.
'use strict'

const fs = require('fs')
const path = require('path')
const readline = require('readline')

const KJS = path.dirname(require.resolve('kafkajs/package.json'))
const kreq = rel => require(path.join(KJS, 'src', rel))

const { RecordBatch } = kreq('protocol/recordBatch/v0')
const Record = kreq('protocol/recordBatch/record/v0')
const RecordBatchDecoder = kreq('protocol/recordBatch/v0/decoder')
const MessageSet = kreq('protocol/messageSet')
const MessageSetDecoder = kreq('protocol/messageSet/decoder')
const ProduceV3 = kreq('protocol/requests/produce/v3/request')
const decodeMessages = kreq('protocol/requests/fetch/v4/decodeMessages')
const Decoder = kreq('protocol/decoder')
const Encoder = kreq('protocol/encoder')
const crc32C = kreq('protocol/recordBatch/crc32C')
const Long = kreq('utils/long')
const { Types, Codecs } = kreq('protocol/message/compression')

// Pluggable codecs, registered the way kafkajs's README says (CompressionCodecs[type] = factory).
const codecs = { gzip: true, snappy: false, lz4: false, zstd: false }
const codecErrors = {}
const plug = (name, type, load) => {
  try {
    Codecs[type] = load()
    codecs[name] = true
  } catch (e) {
    codecErrors[name] = `${e.name}: ${e.message}`
  }
}
plug('snappy', Types.Snappy, () => require('kafkajs-snappy'))
plug('lz4', Types.LZ4, () => {
  const LZ4Codec = require('kafkajs-lz4')
  return new LZ4Codec().codec
})
plug('zstd', Types.ZSTD, () => require('@kafkajs/zstd')())

const b64 = buf => (buf == null ? null : Buffer.from(buf).toString('base64'))
const unb64 = s => (s == null ? null : Buffer.from(s, 'base64'))

const headersIn = pairs => {
  const obj = {}
  for (const [key, values] of pairs || []) {
    const bufs = values.map(unb64)
    obj[key] = bufs.length === 1 ? bufs[0] : bufs
  }
  return obj
}
// kafkajs folds headers into an object by key; a value that is not a Buffer or null can only come from
// that fold picking up an Object.prototype member (a header named "constructor", "toString", "__proto__"):
// it is passed on as {"notBytes": description} rather than crashing here.
const headerValueOut = v =>
  v === null || Buffer.isBuffer(v) ? b64(v) : { notBytes: `${typeof v} ${String(v).slice(0, 40)}` }
const headersOut = obj =>
  Object.keys(obj).map(key => {
    const v = obj[key]
    return [key, (Array.isArray(v) ? v : [v]).map(headerValueOut)]
  })

const recordOut = r => ({
  offset: String(r.offset),
  timestamp: String(r.timestamp),
  attributes: r.attributes,
  key: b64(r.key),
  value: b64(r.value),
  headers: r.headers ? headersOut(r.headers) : [],
  isControlRecord: r.isControlRecord === undefined ? null : r.isControlRecord,
  magicByte: r.magicByte === undefined ? null : r.magicByte,
})

const messageOut = m => ({
  offset: String(m.offset),
  crc: m.crc,
  magicByte: m.magicByte,
  attributes: m.attributes,
  timestamp: m.timestamp === undefined ? null : String(m.timestamp),
  key: b64(m.key),
  value: b64(m.value),
})

async function encode(cmd) {
  const records = cmd.records.map(r =>
    Record({
      offsetDelta: r.offsetDelta,
      timestampDelta: Long.fromString(r.timestampDelta),
      key: unb64(r.key),
      value: unb64(r.value),
      headers: headersIn(r.headers),
    })
  )
  const batch = await RecordBatch({
    compression: cmd.compression,
    firstOffset: Long.fromString(cmd.firstOffset),
    firstTimestamp: cmd.firstTimestamp,
    maxTimestamp: cmd.maxTimestamp,
    partitionLeaderEpoch: cmd.partitionLeaderEpoch,
    lastOffsetDelta: cmd.lastOffsetDelta,
    transactional: cmd.transactional,
    producerId: Long.fromString(cmd.producerId),
    producerEpoch: cmd.producerEpoch,
    firstSequence: cmd.firstSequence,
    records,
  })
  return { bytes: b64(batch.buffer) }
}

async function produce(cmd) {
  const partitionData = {
    partition: 0,
    messages: cmd.messages.map(m => ({
      key: unb64(m.key),
      value: unb64(m.value),
      timestamp: m.timestamp,
      headers: headersIn(m.headers),
    })),
  }
  if (cmd.firstSequence !== undefined) partitionData.firstSequence = cmd.firstSequence
  const args = {
    acks: -1,
    timeout: 30000,
    compression: cmd.compression,
    transactionalId: cmd.transactionalId === undefined ? null : cmd.transactionalId,
    topicData: [{ topic: 't', partitions: [partitionData] }],
  }
  if (cmd.producerId !== undefined) args.producerId = Long.fromString(cmd.producerId)
  if (cmd.producerEpoch !== undefined) args.producerEpoch = cmd.producerEpoch
  const request = await ProduceV3(args).encode()
  // ProduceRequest v3: transactional_id acks timeout [topic [partition record_set]]
  const d = new Decoder(request.buffer)
  d.readString()
  d.readInt16()
  d.readInt32()
  d.readInt32() // topics
  d.readString()
  d.readInt32() // partitions
  d.readInt32() // partition
  const size = d.readInt32()
  return { bytes: b64(d.readBytes(size)) }
}

async function messageSet(cmd) {
  const entries = cmd.entries.map(e => ({
    key: unb64(e.key),
    value: unb64(e.value),
    timestamp: e.timestamp,
  }))
  const encoder = MessageSet({ messageVersion: cmd.magic, compression: Types.None, entries })
  return { bytes: b64(encoder.buffer) }
}

// One log entry: offset int64, length int32, then the entry; the magic byte is at entry + 16 for all
// three formats (v0/v1: crc int32 then magic; v2: partition leader epoch int32 then magic).
async function decodeEntry(buf, pos) {
  const length = buf.readInt32BE(pos + 8)
  const entry = buf.subarray(pos, pos + 12 + length)
  const magic = entry.readInt8(16)
  if (magic === 2) {
    const b = await RecordBatchDecoder(new Decoder(entry))
    const storedCrc = entry.readUInt32BE(17)
    return {
      position: pos,
      magic,
      size: 12 + length,
      crcValid: crc32C(entry.subarray(21)) === storedCrc,
      firstOffset: b.firstOffset,
      partitionLeaderEpoch: b.partitionLeaderEpoch,
      inTransaction: b.inTransaction,
      isControlBatch: b.isControlBatch,
      lastOffsetDelta: b.lastOffsetDelta,
      producerId: b.producerId,
      producerEpoch: b.producerEpoch,
      firstSequence: b.firstSequence,
      firstTimestamp: b.firstTimestamp,
      maxTimestamp: b.maxTimestamp,
      timestampType: b.timestampType,
      records: b.records.map(recordOut),
    }
  }
  const messages = await MessageSetDecoder(new Decoder(entry), entry.length)
  return { position: pos, magic, size: 12 + length, messages: messages.map(messageOut) }
}

async function decode(cmd) {
  const buf = cmd.path !== undefined ? fs.readFileSync(cmd.path) : unb64(cmd.bytes)
  const entries = []
  let pos = 0
  let stop = null
  while (pos < buf.length) {
    if (buf.length - pos < 17) {
      stop = { position: pos, reason: 'partial entry header' }
      break
    }
    const length = buf.readInt32BE(pos + 8)
    if (length < 5 || buf.length - pos - 12 < length) {
      stop = { position: pos, reason: `entry length ${length} with ${buf.length - pos - 12} bytes left` }
      break
    }
    try {
      entries.push(await decodeEntry(buf, pos))
    } catch (e) {
      entries.push({ position: pos, size: 12 + length, error: { name: e.name, message: e.message } })
    }
    pos += 12 + length
  }
  const out = { entries, stop }
  if (cmd.fetch) {
    try {
      // decodeMessages reads the records' int32 size first, as in a fetch response
      const framed = new Encoder().writeInt32(buf.length).writeBuffer(buf)
      const flat = await decodeMessages(new Decoder(framed.buffer))
      // offsets and timestamps only: the records themselves come from the same decoders as "entries"
      out.fetch = {
        offsets: flat.map(r => String(r.offset)),
        timestamps: flat.map(r => (r.timestamp === undefined ? null : String(r.timestamp))),
      }
    } catch (e) {
      out.fetch = null
      out.fetchError = { name: e.name, message: e.message }
    }
  }
  return out
}

const ops = {
  info: async () => ({
    kafkajs: require('kafkajs/package.json').version,
    node: process.version,
    codecs,
    codecErrors,
  }),
  encode,
  produce,
  messageset: messageSet,
  decode,
}

async function run(cmd) {
  try {
    if (cmd.op === 'many') {
      const results = []
      for (const c of cmd.cmds) results.push(await run(c))
      return { ok: true, results }
    }
    const op = ops[cmd.op]
    if (!op) throw new Error(`unknown op ${JSON.stringify(cmd.op)}`)
    return { ok: true, ...(await op(cmd)) }
  } catch (e) {
    return { ok: false, error: { name: e.name, message: e.message } }
  }
}

async function main() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  for await (const line of rl) {
    if (!line.trim()) continue
    let answer
    try {
      answer = await run(JSON.parse(line))
    } catch (e) {
      answer = { ok: false, error: { name: e.name, message: e.message } }
    }
    await new Promise(resolve => process.stdout.write(JSON.stringify(answer) + '\n', resolve))
  }
}

main()
