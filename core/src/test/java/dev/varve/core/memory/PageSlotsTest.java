package dev.varve.core.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.varve.core.page.Page;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A slot pool larger than one buffer chunk keeps every slot's page apart, across the chunk boundary too. */
@Timeout(60)
class PageSlotsTest {
    private static final int PAGE = 4096;

    @Test
    void slotsOnBothSidesOfAChunkBoundaryHoldTheirOwnPage() {
        int perChunk = RegionChunks.framesPerChunk(PAGE);
        PageSlots slots = new PageSlots((perChunk + 2L) * PAGE, PAGE, "checkpointBufferSize");
        assertEquals(perChunk + 2, slots.capacity());
        ByteBuffer src = ByteBuffer.allocateDirect(PAGE);
        Page page = new Page(src, 0, PAGE);
        Set<ByteBuffer> buffers = Collections.newSetFromMap(new IdentityHashMap<>()); // a buffer's hashCode reads its content
        int[] taken = new int[perChunk + 2];
        for (int i = 0; i < taken.length; i++) {
            src.putInt(0, i).putInt(PAGE - 4, ~i);
            taken[i] = slots.copyOf(page);
        }
        assertEquals(-1, slots.copyOf(page), "every slot is taken");
        ByteBuffer dst = ByteBuffer.allocate(PAGE);
        for (int i = 0; i < taken.length; i++) {
            slots.copyOut(taken[i], dst, 0);
            assertEquals(i, dst.getInt(0));
            assertEquals(~i, dst.getInt(PAGE - 4));
            ByteBuffer memory = slots.memoryOf(taken[i]);
            assertEquals(i, memory.getInt(slots.offsetOf(taken[i])), "memoryOf and offsetOf find slot " + taken[i]);
            buffers.add(memory);
        }
        assertEquals(2, buffers.size(), "the slots span two chunks");
        slots.free(taken[perChunk]);
        assertEquals(taken[perChunk], slots.copyOf(page));
        assertSame(slots.memoryOf(perChunk), slots.memoryOf(perChunk + 1));
    }
}
