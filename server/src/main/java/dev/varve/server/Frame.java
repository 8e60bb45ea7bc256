package dev.varve.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ReferenceCounted;

import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * One shipping frame (see {@link ShipProtocol}): a type and a payload, checked by a CRC32C. Built straight into a
 * pooled buffer by {@link #start}/{@link #finish}; the decoder hands the payload out as a slice it owns.
 */
final class Frame implements ReferenceCounted {
    final byte type;
    final ByteBuf payload;

    Frame(byte type, ByteBuf payload) {
        this.type = type;
        this.payload = payload;
    }

    /** A buffer with room for the length and type; write the payload after it, then {@link #finish}. */
    static ByteBuf start(ByteBufAllocator alloc, byte type, int payloadHint) {
        return begin(alloc.buffer(ShipProtocol.LENGTH_BYTES + ShipProtocol.FRAME_OVERHEAD + payloadHint), type);
    }

    /** As {@link #start}, off-heap: for payloads read straight from the store, which reads into direct buffers only. */
    static ByteBuf startDirect(ByteBufAllocator alloc, byte type, int payloadHint) {
        return begin(alloc.directBuffer(ShipProtocol.LENGTH_BYTES + ShipProtocol.FRAME_OVERHEAD + payloadHint), type);
    }

    private static ByteBuf begin(ByteBuf b, byte type) {
        b.writeInt(0); // length, filled in by finish
        b.writeByte(type);
        return b;
    }

    /** Fills in the length and appends the CRC32C of type and payload (see {@link ShipProtocol#crcCovers}). */
    static ByteBuf finish(ByteBuf b) {
        int bodyStart = b.readerIndex() + ShipProtocol.LENGTH_BYTES;
        CRC32C crc = new CRC32C();
        crc.update(b.nioBuffer(bodyStart, ShipProtocol.crcCovers(b.getByte(bodyStart), b.writerIndex() - bodyStart)));
        b.writeInt((int) crc.getValue());
        b.setInt(b.readerIndex(), b.writerIndex() - bodyStart);
        return b;
    }

    static void writeString(ByteBuf b, String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > 0xFFFF) throw new IllegalArgumentException("string of " + bytes.length + " bytes does not fit a frame field");
        b.writeShort(bytes.length);
        b.writeBytes(bytes);
    }

    static String readString(ByteBuf b) {
        int n = b.readUnsignedShort();
        String s = b.toString(b.readerIndex(), n, StandardCharsets.UTF_8);
        b.skipBytes(n);
        return s;
    }

    @Override
    public int refCnt() {
        return payload.refCnt();
    }

    @Override
    public Frame retain() {
        payload.retain();
        return this;
    }

    @Override
    public Frame retain(int increment) {
        payload.retain(increment);
        return this;
    }

    @Override
    public Frame touch() {
        payload.touch();
        return this;
    }

    @Override
    public Frame touch(Object hint) {
        payload.touch(hint);
        return this;
    }

    @Override
    public boolean release() {
        return payload.release();
    }

    @Override
    public boolean release(int decrement) {
        return payload.release(decrement);
    }
}
