package dev.varve.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.TooLongFrameException;

import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * Cuts the byte stream into {@link Frame}s and checks each one's CRC32C; a frame longer than the limit or with a
 * wrong checksum fails the connection (a transfer is never trusted past a damaged frame).
 */
final class FrameDecoder extends LengthFieldBasedFrameDecoder {
    private final int maxFrameBytes;

    /** Frames of up to {@code maxFrameBytes} after the length field. */
    FrameDecoder(int maxFrameBytes) {
        super(ShipProtocol.LENGTH_BYTES + maxFrameBytes, 0, ShipProtocol.LENGTH_BYTES, 0, ShipProtocol.LENGTH_BYTES);
        this.maxFrameBytes = maxFrameBytes;
        // an image frame (1 MiB) spans reads: the bytes received stay in the buffers they were read into, instead of
        // being copied into one cumulation buffer; the receiver copies a frame's pages once, where it writes them
        setCumulator(COMPOSITE_CUMULATOR);
    }

    /**
     * A frame shorter than a socket read can be (1 MiB, see {@link SnapshotBackup}) is copied out of the buffers it
     * arrived in. A slice of them would keep each whole read buffer alive (netty's receive buffers are up to 1 MiB,
     * carved from 8 MiB direct chunks) for as long as the frame waits for the applier: the receiver bounds that wait
     * by the frames' own bytes, so a lagging applier behind a stream of small follow frames, each arriving in a read
     * of its own, pinned up to a read buffer per frame, gigabytes of direct memory, and the JVM refused to reserve
     * more. A larger frame fills most of the reads it spans and stays a slice of them: the pages are copied once, where
     * they are written.
     */
    @Override
    protected ByteBuf extractFrame(ChannelHandlerContext ctx, ByteBuf buffer, int index, int length) {
        if (length >= COPY_BELOW_BYTES) return super.extractFrame(ctx, buffer, index, length);
        return Unpooled.buffer(length).writeBytes(buffer, index, length);
    }

    /** Frames shorter than this are copied out of the read buffers: the most one socket read of the receiver brings. */
    static final int COPY_BELOW_BYTES = SnapshotBackup.MAX_READ_BYTES;

    /** Whether part of a frame arrived and waits for the rest (event loop only). */
    boolean midFrame() {
        return actualReadableBytes() > 0;
    }

    @Override
    protected Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
        int start = in.readerIndex();
        ByteBuf body;
        try {
            body = (ByteBuf) super.decode(ctx, in);
        } catch (TooLongFrameException e) {
            // a length field that reads as text ("HTTP", "SSH-") is a peer speaking another protocol, not a big frame;
            // so is one over the limit (a TLS alert's 15 03 03 00, a length that would be negative): the bytes are still
            // in the buffer (skipped, not yet discarded), and the message shows them rather than netty's arithmetic
            if (in.writerIndex() - start < ShipProtocol.LENGTH_BYTES) throw e;
            String lengthText = in.toString(start, ShipProtocol.LENGTH_BYTES, StandardCharsets.US_ASCII);
            if (lengthText.chars().allMatch(c -> c >= 0x20 && c < 0x7F))
                throw new TooLongFrameException("the peer does not speak Varve's shipping protocol: its stream starts \"" + lengthText + "\"", e);
            long announced = in.getUnsignedInt(start);
            throw new TooLongFrameException(String.format("the peer does not speak Varve's shipping protocol: its stream starts %02x %02x %02x %02x,"
                            + " a frame of %d bytes, where none is over %d", in.getByte(start), in.getByte(start + 1), in.getByte(start + 2),
                    in.getByte(start + 3), announced, maxFrameBytes), e);
        }
        if (body == null) return null;
        try {
            if (body.readableBytes() < ShipProtocol.FRAME_OVERHEAD)
                throw new CorruptedFrameException("shipping frame of " + body.readableBytes() + " bytes is shorter than its header");
            int crcAt = body.writerIndex() - 4;
            CRC32C crc = new CRC32C();
            crc.update(body.nioBuffer(body.readerIndex(), ShipProtocol.crcCovers(body.getByte(body.readerIndex()), crcAt - body.readerIndex())));
            int expected = body.getInt(crcAt);
            if ((int) crc.getValue() != expected)
                throw new CorruptedFrameException(String.format("shipping frame fails its CRC32C (stored %08x, computed %08x)", expected, (int) crc.getValue()));
            byte type = body.readByte();
            return new Frame(type, body.retainedSlice(body.readerIndex(), crcAt - body.readerIndex()));
        } finally {
            body.release();
        }
    }
}
