package dev.varve.core.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.page.Page;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A slot pool keeps every slot's page apart, across chunk boundaries too; its memory is allocated as slots are first
 * handed out, slots given back are handed out again last in, first out, and slots whose chunk the JVM cannot give are
 * never handed out.
 */
@Timeout(60)
class PageSlotsTest {
    private static final int PAGE = 4096;
    private static final int PER_CHUNK = PageSlots.CHUNK_BYTES / PAGE;
    /** A chunk's memory comes in pieces (GrowingRegion): buffers of this many slots. */
    private static final int PER_PIECE = GrowingRegion.PIECE_BYTES / PAGE;

    private final ByteBuffer src = ByteBuffer.allocateDirect(PAGE);
    private final Page page = new Page(src, 0, PAGE);

    @Test
    void slotsOnBothSidesOfAChunkBoundaryHoldTheirOwnPage() {
        PageSlots slots = new PageSlots((PER_CHUNK + 2L) * PAGE, PAGE, "checkpointBufferSize");
        assertEquals(PER_CHUNK + 2, slots.capacity());
        Set<ByteBuffer> buffers = Collections.newSetFromMap(new IdentityHashMap<>()); // a buffer's hashCode reads its content
        int[] taken = takeAll(slots, PER_CHUNK + 2);
        assertEquals(-1, slots.copyOf(page), "every slot is taken");
        assertEquals(PER_CHUNK + 2, slots.used());
        ByteBuffer dst = ByteBuffer.allocate(PAGE);
        for (int i = 0; i < taken.length; i++) {
            slots.copyOut(taken[i], dst, 0);
            assertEquals(i, dst.getInt(0));
            assertEquals(~i, dst.getInt(PAGE - 4));
            ByteBuffer memory = slots.memoryOf(taken[i]);
            assertEquals(i, memory.getInt(slots.offsetOf(taken[i])), "memoryOf and offsetOf find slot " + taken[i]);
            buffers.add(memory);
        }
        assertEquals(PER_CHUNK / PER_PIECE + 1, buffers.size(), "the slots span two chunks, the first in its pieces");
        slots.free(taken[PER_CHUNK]);
        assertEquals(taken[PER_CHUNK], slots.copyOf(page));
        assertSame(slots.memoryOf(PER_CHUNK), slots.memoryOf(PER_CHUNK + 1));
        slots.awaitAllocations();
    }

    @Test
    void onlyTheFirstChunkIsAllocatedUntilSlotsAreHandedOut() throws Exception {
        List<Integer> asked = new CopyOnWriteArrayList<>();
        PageSlots slots = new PageSlots(16L * PER_CHUNK * PAGE, PAGE, "checkpointBufferSize", PageSlots.CHUNK_BYTES, bytes -> {
            asked.add(bytes);
            return ByteBuffer.allocateDirect(bytes);
        });
        assertEquals(Collections.nCopies(PER_CHUNK / PER_PIECE, GrowingRegion.PIECE_BYTES), asked, "a 64 MiB buffer holds 4 MiB at open, in pieces");
        takeAll(slots, PER_CHUNK + 1);
        slots.awaitAllocations();
        long chunks = bytes(asked) / PageSlots.CHUNK_BYTES;
        assertTrue(chunks >= 2 && chunks <= 3, "chunks as the slots handed out reach them, and one ahead: " + chunks);
    }

    @Test
    void slotsGivenBackAreHandedOutBeforeNewMemory() {
        List<Integer> asked = new CopyOnWriteArrayList<>();
        PageSlots slots = new PageSlots(16L * PER_CHUNK * PAGE, PAGE, "checkpointBufferSize", PageSlots.CHUNK_BYTES, bytes -> {
            asked.add(bytes);
            return ByteBuffer.allocateDirect(bytes);
        });
        // a checkpoint's copies come and go: ten at a time, forty chunks' worth in all
        for (int round = 0; round < 4 * PER_CHUNK; round++) {
            int[] taken = takeAll(slots, 10);
            for (int slot : taken) slots.free(slot);
        }
        assertEquals(0, slots.used());
        slots.awaitAllocations();
        // a pool cycling through all its slots would have allocated all 16 chunks
        assertEquals(2L * PageSlots.CHUNK_BYTES, bytes(asked), "the first chunk, and the one begun ahead of it");
    }

    @Test
    void theSlotGivenBackLastIsHandedOutFirst() {
        PageSlots slots = new PageSlots(64L * PAGE, PAGE, "captureBufferSize");
        int[] taken = takeAll(slots, 8);
        for (int i : new int[] {2, 6, 4}) slots.free(taken[i]);
        // its memory is the likeliest still cached: a queue would hand out taken[2] first, the coldest
        assertEquals(taken[4], slots.copyOf(page));
        assertEquals(taken[6], slots.copyOf(page));
        assertEquals(taken[2], slots.copyOf(page));
        assertEquals(8, slots.used());
        slots.awaitAllocations();
    }

    @Test
    void slotsWhoseChunkCannotBeAllocatedAreNeverHandedOut() {
        long[] asked = {0};
        PageSlots slots = new PageSlots(4L * PER_CHUNK * PAGE, PAGE, "captureBufferSize", PageSlots.CHUNK_BYTES, bytes -> {
            if ((asked[0] += bytes) > 2L * PageSlots.CHUNK_BYTES) throw new OutOfMemoryError("Cannot reserve " + bytes + " bytes of direct buffer memory");
            return ByteBuffer.allocateDirect(bytes);
        });
        int[] taken = takeAll(slots, 2 * PER_CHUNK);
        assertEquals(-1, slots.copyOf(page), "the slots of the two chunks the JVM gave, no more");
        assertEquals(2 * PER_CHUNK, slots.capacity(), "the pool counts only slots it can hand out");
        assertEquals(2 * PER_CHUNK, slots.used());
        ByteBuffer dst = ByteBuffer.allocate(PAGE);
        for (int i = 0; i < taken.length; i += 97) {
            slots.copyOut(taken[i], dst, 0);
            assertEquals(i, dst.getInt(0));
        }
        slots.free(taken[5]);
        assertEquals(taken[5], slots.copyOf(page), "a slot given back is handed out again");
        slots.awaitAllocations();
    }

    @Test
    void aFirstChunkTheJvmCannotGiveNamesTheSetting() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new PageSlots(64L * PAGE, PAGE, "captureBufferSize",
                PageSlots.CHUNK_BYTES, bytes -> {
                    throw new OutOfMemoryError("Cannot reserve " + bytes + " bytes of direct buffer memory");
                }));
        assertTrue(e.getMessage().startsWith("captureBufferSize of 262144 bytes cannot be allocated"), e.getMessage());
    }

    private static long bytes(List<Integer> asked) {
        return asked.stream().mapToLong(Integer::longValue).sum();
    }

    /** Takes {@code n} slots, slot i holding a page stamped with i at both ends. */
    private int[] takeAll(PageSlots slots, int n) {
        int[] taken = new int[n];
        for (int i = 0; i < n; i++) {
            src.putInt(0, i).putInt(PAGE - 4, ~i);
            taken[i] = slots.copyOf(page);
            assertTrue(taken[i] >= 0, "slot " + i);
        }
        return taken;
    }
}
