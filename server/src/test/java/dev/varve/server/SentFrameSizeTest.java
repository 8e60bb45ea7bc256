package dev.varve.server;

import dev.varve.config.ConfigLimits;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A PAGES frame as the sender builds it fits a buffer netty's adaptive allocator pools (1 MiB at most; a larger one is
 * allocated and zero-filled afresh for each frame), and a receiver of any build takes it.
 */
class SentFrameSizeTest {
    /** The largest buffer netty 4.2's {@code AdaptivePoolingAllocator} pools ({@code MAX_POOLED_BUF_SIZE}). */
    private static final int NETTY_MAX_POOLED_BYTES = 1 << 20;

    @Test
    void aSentPagesFrameFitsAPooledBufferAtEveryPageSize() {
        for (int pageSize = ConfigLimits.PAGE_SIZE_MIN; pageSize <= ConfigLimits.PAGE_SIZE_MAX; pageSize <<= 1) {
            int pages = ShipProtocol.pagesPerSentFrame(pageSize);
            int frameBytes = ShipProtocol.LENGTH_BYTES + ShipProtocol.FRAME_OVERHEAD + ShipProtocol.PAGES_RUN_BYTES + pages * pageSize;
            assertTrue(frameBytes <= NETTY_MAX_POOLED_BYTES, pageSize + "-byte pages: a frame of " + frameBytes + " bytes");
            assertEquals(ShipProtocol.pagesPerFrame(pageSize) - 1, pages, pageSize + "-byte pages: as many as fit, and a receiver takes them");
        }
    }
}
