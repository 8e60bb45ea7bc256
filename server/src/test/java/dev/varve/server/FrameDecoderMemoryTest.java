package dev.varve.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * What a received frame holds on to while it waits for the applier. The receiver bounds that wait by the frames'
 * bytes ({@link SnapshotBackup#MAX_QUEUED_BYTES}), so a frame must hold no more than its own bytes: a follow frame of
 * a few bytes, arriving alone in a socket read, once kept the whole read buffer (up to 1 MiB, carved from an 8 MiB
 * direct chunk of netty's allocator) alive as a slice of it, and a follow whose applier lagged behind a stream of
 * small frames pinned gigabytes of direct memory: {@code FollowConcurrentTest} failed with "Cannot reserve 8388608
 * bytes of direct buffer memory".
 */
@Timeout(30)
class FrameDecoderMemoryTest {
    private static final ByteBufAllocator ALLOC = UnpooledByteBufAllocator.DEFAULT;

    @Test
    void aSmallFrameDoesNotHoldTheBufferItWasReadInto() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(ShipProtocol.MAX_FRAME_BYTES));
        List<ByteBuf> reads = new ArrayList<>();
        List<Frame> frames = new ArrayList<>();
        try {
            for (int i = 0; i < 100; i++) {
                // a socket read: a 64 KiB buffer (the least netty's receive allocator guesses here) holding one small frame
                ByteBuf read = ALLOC.directBuffer(64 << 10);
                ByteBuf f = Frame.start(ALLOC, ShipProtocol.CHANGES, 16);
                f.writeLong(i).writeInt(0);
                read.writeBytes(Frame.finish(f));
                f.release();
                reads.add(read);
                ch.writeInbound(read);
                Frame decoded = ch.readInbound();
                assertNotNull(decoded, "frame " + i + " decoded");
                frames.add(decoded); // held, as frames queued for a lagging applier are
            }
            for (int i = 0; i < reads.size(); i++) assertEquals(0, reads.get(i).refCnt(), "read buffer " + i + " is released while its frame waits");
            for (int i = 0; i < frames.size(); i++) assertEquals(i, frames.get(i).payload.readLong(), "frame " + i + "'s payload");
        } finally {
            frames.forEach(Frame::release);
            ch.finishAndReleaseAll();
        }
    }

    @Test
    void aFrameSpanningReadsArrivesWhole() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(ShipProtocol.MAX_FRAME_BYTES));
        ByteBuf f = Frame.start(ALLOC, ShipProtocol.CHANGES, 3 << 20);
        for (int i = 0; i < (3 << 20) / 4; i++) f.writeInt(i);
        ByteBuf whole = Frame.finish(f);
        try {
            while (whole.isReadable()) ch.writeInbound(whole.readRetainedSlice(Math.min(whole.readableBytes(), 100_000)));
            Frame decoded = ch.readInbound();
            assertNotNull(decoded);
            try {
                assertEquals(3 << 20, decoded.payload.readableBytes());
                for (int i = 0; i < (3 << 20) / 4; i++) assertEquals(i, decoded.payload.readInt());
            } finally {
                decoded.release();
            }
        } finally {
            whole.release();
            ch.finishAndReleaseAll();
        }
    }
}
