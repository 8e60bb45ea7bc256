package dev.varve.core.memory;

import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The data region allocated as used ({@link GrowingRegion}): a chunk at open, the next in the background when the one
 * before is first used, each once; a chunk the JVM cannot give stops the growth there, and page memory then works in
 * the chunks it has.
 */
@Timeout(60)
class GrowingRegionTest extends PageMemoryFixture {
    private static final int CHUNK = 64 * PAGE;

    GrowingRegionTest() {
        super(16);
    }

    /**
     * Records the size of every allocation asked for (a chunk, or a piece of one larger than {@link
     * GrowingRegion#PIECE_BYTES}), and refuses those that would take the bytes asked past {@code limit} (-1: none).
     */
    private static final class Allocations implements IntFunction<ByteBuffer> {
        final List<Integer> sizes = new CopyOnWriteArrayList<>();
        final long limit;

        Allocations(long limit) {
            this.limit = limit;
        }

        @Override
        public ByteBuffer apply(int bytes) {
            sizes.add(bytes);
            if (limit >= 0 && bytes() > limit) throw new OutOfMemoryError("Cannot reserve " + bytes + " bytes of direct buffer memory");
            return ByteBuffer.allocateDirect(bytes);
        }

        /** Bytes asked for in all: chunks larger than a piece are asked for a piece at a time. */
        long bytes() {
            return sizes.stream().mapToLong(Integer::longValue).sum();
        }

        /** Waits for the background allocation of chunk {@code n - 1} to have been asked for. */
        void awaitAsked(int n) throws InterruptedException {
            while (sizes.size() < n) Thread.sleep(1);
        }
    }

    @Test
    void onlyTheFirstChunkIsAllocatedAtOpenAndTheNextWhenTheOneBeforeIsFirstUsed() throws Exception {
        Allocations asked = new Allocations(-1);
        // 3.5 chunks: the last one is half a chunk
        GrowingRegion region = new GrowingRegion(64 * 3 + 32, PAGE, "dataRegionSize", CHUNK, asked);
        assertEquals(List.of(CHUNK), asked.sizes, "at open");
        assertEquals(64, region.allocated());
        ByteBuffer first = region.bufferOf(0);
        assertEquals(CHUNK, first.capacity());
        asked.awaitAsked(2); // the second, begun in the background
        assertSame(first, region.bufferOf(63), "a chunk is allocated once");
        ByteBuffer fourth = region.bufferOf(64 * 3 + 31); // not begun yet: allocated by the caller
        assertEquals(32 * PAGE, fourth.capacity(), "the last chunk holds only the region's last pages");
        assertEquals(31 * PAGE, region.offsetOf(64 * 3 + 31));
        region.awaitAllocations();
        assertEquals(List.of(CHUNK, CHUNK, 32 * PAGE), asked.sizes, "the third chunk, never used, was never asked for");
        assertEquals(128, region.allocated(), "allocated counts the chunks from the first on without a gap");
        assertTrue(region.grow(), "the gap filled");
        assertEquals(64 * 3 + 32, region.allocated());
        assertFalse(region.grow(), "every chunk there");
        assertEquals(64 * 3 + 32, region.capacity());
    }

    /**
     * A chunk larger than {@link GrowingRegion#PIECE_BYTES} is asked for a piece at a time, so that no one zero-fill
     * holds the JVM's safepoints for long; every slot's page has a place of its own in the pieces, a chunk's last
     * piece holding what is left of it.
     */
    @Test
    void aChunkLargerThanAPieceIsAllocatedInPiecesAndEverySlotHasAPlaceOfItsOwn() {
        Allocations asked = new Allocations(-1);
        int perPiece = GrowingRegion.PIECE_BYTES / PAGE;
        int perChunk = perPiece * 2 + perPiece / 4; // two whole pieces and a quarter of one
        int frames = perChunk * 2 + 10; // two chunks and ten frames
        GrowingRegion region = new GrowingRegion(frames, PAGE, "dataRegionSize", perChunk * PAGE, asked);
        assertEquals(List.of(GrowingRegion.PIECE_BYTES, GrowingRegion.PIECE_BYTES, perPiece / 4 * PAGE), asked.sizes, "the first chunk, at open");
        for (int slot = 0; slot < frames; slot++) {
            ByteBuffer b = region.bufferOf(slot);
            assertTrue(region.offsetOf(slot) + PAGE <= b.capacity(), "slot " + slot + " inside its piece");
            b.putLong(region.offsetOf(slot), slot);
            b.putLong(region.offsetOf(slot) + PAGE - 8, ~slot);
        }
        for (int slot = 0; slot < frames; slot++) {
            ByteBuffer b = region.bufferOf(slot);
            assertEquals(slot, b.getLong(region.offsetOf(slot)), "slot " + slot + " kept its first bytes");
            assertEquals(~slot, b.getLong(region.offsetOf(slot) + PAGE - 8), "slot " + slot + " kept its last bytes");
        }
        region.awaitAllocations();
        int pieceBytes = GrowingRegion.PIECE_BYTES;
        // a piece may be asked for by the background thread or by a thread that needed the chunk meanwhile, in any order
        assertEquals(sorted(List.of(pieceBytes, pieceBytes, perPiece / 4 * PAGE, pieceBytes, pieceBytes, perPiece / 4 * PAGE, 10 * PAGE)),
                sorted(asked.sizes), "every piece asked for once");
        assertEquals(frames, region.allocated());
    }

    /**
     * A thread that needs a chunk whose background allocation is under way allocates the pieces not begun yet itself,
     * rather than wait for a thread that yields its core after every piece; it waits only for the piece the background
     * thread is in.
     */
    @Test
    void aThreadThatNeedsAChunkUnderWayAllocatesItsRemainingPiecesItself() throws Exception {
        CountDownLatch backgroundInFirstPiece = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> askedBy = new CopyOnWriteArrayList<>();
        IntFunction<ByteBuffer> allocator = bytes -> {
            String thread = Thread.currentThread().getName();
            askedBy.add(thread);
            if (thread.contains("-chunk-1") && backgroundInFirstPiece.getCount() > 0) {
                backgroundInFirstPiece.countDown();
                try {
                    release.await(); // the background thread held in chunk 1's first piece
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return ByteBuffer.allocateDirect(bytes);
        };
        int perPiece = GrowingRegion.PIECE_BYTES / PAGE;
        int perChunk = perPiece * 4;
        GrowingRegion region = new GrowingRegion(perChunk * 2, PAGE, "dataRegionSize", perChunk * PAGE, allocator);
        region.bufferOf(0); // the first chunk's first use begins the second's in the background
        assertTrue(backgroundInFirstPiece.await(10, TimeUnit.SECONDS), "the background thread began chunk 1");
        Thread needing = new Thread(() -> region.bufferOf(perChunk), "needing");
        needing.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (askedBy.stream().filter("needing"::equals).count() < 3 && System.nanoTime() < deadline) Thread.sleep(1);
        assertEquals(3, askedBy.stream().filter("needing"::equals).count(), "while the background thread is held, by the thread that needs the chunk: " + askedBy);
        assertTrue(needing.isAlive(), "it still waits for the piece the background thread is in");
        release.countDown();
        needing.join(10_000);
        assertFalse(needing.isAlive(), "it has its chunk once the background thread's piece is done");
        assertEquals(4 + 4, askedBy.size(), "the first chunk's four pieces, and chunk 1's four, each once: " + askedBy);
        assertEquals(perChunk * 2, region.allocated());
    }

    private static List<Integer> sorted(List<Integer> sizes) {
        return sizes.stream().sorted().toList();
    }

    @Test
    void threadsRacingForAChunkGetTheSameOneAllocatedOnce() throws Exception {
        Allocations asked = new Allocations(-1);
        GrowingRegion region = new GrowingRegion(64 * 8, PAGE, "dataRegionSize", CHUNK, asked);
        AtomicReferenceArray<ByteBuffer> seen = new AtomicReferenceArray<>(8);
        Set<String> failures = ConcurrentHashMap.newKeySet();
        CountDownLatch go = new CountDownLatch(1);
        Thread[] threads = new Thread[4];
        for (int t = 0; t < threads.length; t++) {
            threads[t] = new Thread(() -> {
                try {
                    go.await();
                    for (int slot = 0; slot < 64 * 8; slot += 7) {
                        ByteBuffer chunk = region.bufferOf(slot);
                        if (!seen.compareAndSet(slot / 64, null, chunk) && seen.get(slot / 64) != chunk) failures.add("two chunks for " + slot / 64);
                    }
                } catch (Throwable e) {
                    failures.add(e.toString());
                }
            });
            threads[t].start();
        }
        go.countDown();
        for (Thread t : threads) t.join();
        region.awaitAllocations();
        assertEquals(Set.of(), failures);
        assertEquals(8, asked.sizes.size(), "each chunk asked for once");
    }

    @Test
    void aChunkTheJvmCannotGiveStopsTheGrowthThere() throws Exception {
        Allocations asked = new Allocations(2L * CHUNK); // the first two chunks, no more
        GrowingRegion region = new GrowingRegion(64 * 4, PAGE, "dataRegionSize", CHUNK, asked);
        assertNotNull(region.bufferOf(0));
        asked.awaitAsked(2); // the second chunk asked for before the third, which is refused
        assertNotNull(region.bufferOf(64));
        asked.awaitAsked(3);
        assertNull(region.bufferOf(128), "the third chunk could not be allocated");
        assertEquals(128, region.capacity(), "the region stops at the chunks it has");
        assertNotNull(region.bufferOf(127), "and still serves them");
        region.awaitAllocations();
        assertEquals(3, asked.sizes.size(), "no chunk asked for past the one refused");
    }

    /**
     * Page memory over a region that stops growing at two of its four chunks: frames are made for those slots only,
     * and pages past them are read by evicting clean ones, each exactly as written.
     */
    @Test
    void pageMemoryWhoseRegionStopsGrowingEvictsWithinTheChunksItHas() {
        int frames = 4 * FRAMES;
        int chunk = FRAMES * PAGE;
        open();
        memory.close();
        memory = new PageMemory(store, (long) frames * PAGE, 16L * PAGE, n -> new GrowingRegion(n, PAGE, "dataRegionSize", chunk, new Allocations(2L * chunk)));
        writeClean(0, frames);
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < frames; i += 3) assertArrayEquals(body(i, 1), read(i), "page " + i);
        }
        assertEquals(2 * FRAMES, memory.framesMade(), "frames made in the two chunks the region has, no more");
        assertTrue(memory.pagesEvicted() > 0, "pages past them were read by evicting clean ones");
        assertTrue(memory.tryReserve(2 * FRAMES - 320), "head-room within the region it has, its slack of 320 aside");
        memory.releaseHeadroom(2 * FRAMES - 320);
        IllegalArgumentException tooLarge = assertThrows(IllegalArgumentException.class, () -> memory.tryReserve(2 * FRAMES));
        assertTrue(tooLarge.getMessage().contains("the JVM gave it only 2560 of its 5120 pages: raise -XX:MaxDirectMemorySize"),
                tooLarge.getMessage());
    }

    /**
     * The slack kept out of head-room is a sixteenth of the memory allocated, not of the region: the first write to a
     * large region does not wait for a sixteenth of it to be allocated (2 GiB: 128 MiB, some 0.3-0.5 s on the VMs
     * Varve is benchmarked on). Repeated: a reservation that raced the background allocations to the region's end once
     * took the region for one that could not grow and was refused (one run in twelve).
     */
    @RepeatedTest(40)
    void theFirstReservationInALargeRegionWaitsForNoChunkBeyondTheFirst() {
        int chunk = 1024 * PAGE;
        int frames = 32 * 1024; // a sixteenth of it is two chunks
        Allocations asked = new Allocations(-1);
        open();
        memory.close();
        memory = new PageMemory(store, (long) frames * PAGE, 16L * PAGE, n -> new GrowingRegion(n, PAGE, "dataRegionSize", chunk, asked));
        assertTrue(memory.tryReserve(1));
        assertTrue(asked.bytes() <= 2L * chunk, "the first chunk, and the next begun in the background, no more: " + asked.sizes);
        memory.releaseHeadroom(1);
        assertTrue(memory.tryReserve(frames - frames / 16), "all the region's head-room, its slack of a sixteenth aside");
        assertEquals(32L * chunk, asked.bytes(), "every chunk allocated to grant it");
        assertFalse(memory.tryReserve(1));
        memory.releaseHeadroom(frames - frames / 16);
    }

    /** A data region grows a 64th at a time, within 4 and 32 MiB: a default open zero-fills 4 MiB, not 32. */
    @Test
    void aDataRegionGrowsBySixtyFourthsOfItWithinFourAndThirtyTwoMiB() {
        assertEquals(4 << 20, GrowingRegion.regionChunkBytes(8L << 20));
        assertEquals(4 << 20, GrowingRegion.regionChunkBytes(256L << 20), "the default region");
        assertEquals(16 << 20, GrowingRegion.regionChunkBytes(1L << 30));
        assertEquals(32 << 20, GrowingRegion.regionChunkBytes(2L << 30));
        assertEquals(32 << 20, GrowingRegion.regionChunkBytes(1L << 40), "the largest region: 32,768 pieces, not 262,144");
        GrowingRegion region = new GrowingRegion(65536, 4096); // 256 MiB of 4 KiB pages
        assertEquals(1024, region.allocated(), "4 MiB allocated at open");
        region.awaitAllocations();
    }
}
