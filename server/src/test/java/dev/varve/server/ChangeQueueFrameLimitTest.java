package dev.varve.server;

import dev.varve.engine.ChangeListener.Change;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A write is measured against the receiver's frame limit as the frame it goes out in — its body plus the follow
 * frame's sequence number and CRC — not as its body alone: a write within those bytes of the limit passed the sender
 * and ended the follow at the receiver as "the peer does not speak Varve's shipping protocol".
 */
class ChangeQueueFrameLimitTest {
    /** The CHANGES body of one change of table "t", key "k" and a value of {@code valueBytes} bytes (see ChangeQueue.onWrite). */
    private static int bodyBytes(int valueBytes) {
        return 1 + 8 + 4 + (2 + 1) + 4 + (2 + 1) + 4 + valueBytes;
    }

    private static void write(ChangeQueue q, int valueBytes) {
        q.onWrite(100, List.of(new Change("t", new byte[]{'k'}, new byte[valueBytes], 0)));
    }

    @Test
    void aWriteWhoseFrameIsOverTheLimitEndsTheStreamAtTheSender() throws InterruptedException {
        int limit = 1_000;
        int framed = ShipProtocol.SEQUENCE_BYTES + ShipProtocol.FRAME_OVERHEAD - 1; // what a body gains on the wire
        int fits = limit - framed - bodyBytes(0); // the largest value whose frame is exactly the limit

        ChangeQueue atLimit = new ChangeQueue(1 << 20, limit);
        write(atLimit, fits);
        assertNull(atLimit.overflow(), "a frame of exactly the limit is sent");
        assertEquals(bodyBytes(fits), atLimit.take(0, Integer.MAX_VALUE).get(0).length);

        ChangeQueue over = new ChangeQueue(1 << 20, limit);
        write(over, fits + 1); // its body alone is under the limit by the sequence number and CRC
        assertTrue(bodyBytes(fits + 1) < limit);
        String why = over.overflow();
        assertNotNull(why, "a write whose frame passes the limit must end the stream at the sender, not at the receiver");
        assertTrue(why.contains("larger than one follow frame") && why.contains("at most " + limit), why);
    }
}
