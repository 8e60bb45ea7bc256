package dev.varve.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.memory.PageWriteHook;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageChecksum;
import dev.varve.core.store.PageStore;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Throttle} over real page memory and its checkpoint buffer. Pacing: writers are parked only when the pages
 * the checkpoint has still to write could overflow the buffer, or when they dirty pages ahead of its progress. The
 * reservation: the deadlock it removes, set up step by step — a write that changes two pages of the running checkpoint
 * when the buffer has room for one copy. Without the reservation the writer takes the last slot for its first page,
 * waits for a second slot holding that page's write latch, and a checkpointer that comes to that page first waits for
 * its latch for good — slots free only as the checkpoint goes on. With it, the writer waits in {@link
 * Throttle#beforeWrite} holding nothing, and the checkpoint goes through in any order.
 */
@Timeout(120)
class ThrottleBufferTest {
    private static final int PAGE = 1024;
    /** The smallest region page memory accepts. */
    private static final int FRAMES = 1280;
    private static final int SLOTS = 4;
    private static final int FILE = PageId.fileId(1, 3);

    @TempDir
    Path dir;

    private PageStore store;
    private PageMemory memory;
    /** The writer's and the checkpointer's threads: their own, as the common pool may have one thread for both. */
    private final ExecutorService threads = Executors.newFixedThreadPool(2);

    @AfterEach
    void close() {
        threads.shutdownNow();
        if (memory != null) memory.close();
        if (store != null) store.close();
    }

    @Test
    void aCheckpointWhosePagesFitInTheBufferNeverThrottles() {
        open();
        Throttle throttle = new Throttle(memory);
        for (int i = 0; i < SLOTS; i++) write(i, 1);
        memory.markCheckpoint();
        throttle.begin(memory.markedPages().size(), false);
        for (int i = 0; i < SLOTS - 1; i++) write(i, 2); // three quarters of the buffer used, no page written yet
        throttle.beforeWrite(1);
        throttle.afterWrite(1);
        assertEquals(0, throttle.throttledNanos(), "the pages left to write fit in the buffer: it cannot overflow");
    }

    @Test
    void aCheckpointLargerThanTheBufferThrottlesPastHalfFullAheadOfItsProgress() {
        open();
        Throttle throttle = new Throttle(memory);
        for (int i = 0; i < 2 * SLOTS; i++) write(i, 1);
        memory.markCheckpoint();
        throttle.begin(memory.markedPages().size(), false);
        for (int i = 0; i < SLOTS - 1; i++) write(i, 2);
        throttle.beforeWrite(1);
        throttle.afterWrite(1);
        assertTrue(throttle.throttledNanos() > 0, "three quarters full, nothing written, and more pages than slots to come");
    }

    /**
     * Region pacing: the pages dirtied while a checkpoint runs may grow in step with its progress, up to the frames
     * free when it began — not up to the frames it frees as it writes its pages, which would leave the next checkpoint
     * no room; a writer ahead of that is parked, unless the region is at most half held.
     */
    @Test
    void writersDirtyingPagesAheadOfTheCheckpointAreParkedPastHalfHeld() {
        open();
        Throttle throttle = new Throttle(memory);
        long limit = memory.headroomLimit();
        int marked = (int) limit / 3;
        for (int i = 0; i < marked; i++) write(i, 1);
        memory.markCheckpoint();
        List<Frame> set = memory.markedPages();
        set.sort(Comparator.comparingLong(Frame::heldPageId));
        throttle.begin(set.size(), false);
        int next = marked;
        for (; next < marked + 20; next++) write(next, 1);
        assertEquals(0, paced(throttle), (marked + 20) + " frames held of " + limit + ": the region is not paced");
        for (; next < limit / 2 + 10; next++) write(next, 1);
        assertTrue(paced(throttle) > 0, "past half held, and nothing of the checkpoint done");

        CheckpointPageWriter pageWriter = new CheckpointPageWriter(memory, new CheckpointMarkers(FileIOFactory.standard(), dir),
                PageCodec.DISABLED, p -> 0, new CheckpointPool(1, false), throttle, e -> { });
        pageWriter.writePages(set);
        assertEquals(0, paced(throttle), "the checkpoint done: " + (next - marked) + " pages dirtied of the " + (limit - marked) + " free at its start");
        long budget = limit - marked;
        for (; next < marked + budget + 5; next++) write(next, 1);
        assertTrue(memory.heldPages() < limit, "the checkpoint's own pages are free again");
        assertTrue(paced(throttle) > 0, "more pages dirtied than were free when the checkpoint began");
    }

    /** One write's pass through the throttle: the time it was parked. */
    private static long paced(Throttle throttle) {
        long before = throttle.throttledNanos();
        throttle.beforeWrite(1);
        throttle.afterWrite(1);
        return throttle.throttledNanos() - before;
    }

    @Test
    void aWriteThatNeedsMoreCopiesThanTheBufferHoldsWaitsBeforeItLatchesAnything() throws Exception {
        open();
        Throttle throttle = new Throttle(memory);
        for (int i = 0; i < 6; i++) write(i, 1);
        memory.markCheckpoint();
        List<Frame> set = memory.markedPages();
        assertEquals(6, set.size());
        // other writers changed pages 0..2 after the mark: one slot of four is left
        for (int i = 0; i < 3; i++) write(i, 2);
        assertEquals(SLOTS - 1, memory.checkpointBufferUsed());

        CountDownLatch firstPageChanged = new CountDownLatch(1);
        memory.addWriteHook(new PageWriteHook() {
            @Override
            public void beforeChange(Frame page, boolean fresh) {
                if (page.heldPageId() == id(4)) firstPageChanged.countDown();
            }

            @Override
            public void afterChange(Frame page) {
            }
        });
        AtomicReference<Thread> writerThread = new AtomicReference<>();
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
            writerThread.set(Thread.currentThread());
            throttle.beforeWrite(2);
            try {
                Page p4 = memory.acquireWrite(id(4)); // the last slot
                Page p5 = memory.acquireWrite(id(5)); // needs another: without the reservation, waits holding page 4
                p4.putBytes(PageHeader.SIZE, body(4, 2), 0, PAGE - PageHeader.SIZE);
                p5.putBytes(PageHeader.SIZE, body(5, 2), 0, PAGE - PageHeader.SIZE);
                memory.releaseWrite(p5);
                memory.releaseWrite(p4);
            } finally {
                throttle.afterWrite(2);
            }
        }, threads);
        // the writer is either waiting for room before its write (the reservation) or has changed page 4 (none)
        while (!firstPageChanged.await(1, TimeUnit.MILLISECONDS) && !waitingForCopies(writerThread.get())) {
            if (writer.isDone()) writer.get();
        }

        // the checkpointer comes to page 4 first, then the rest: slots free as their pages reach the file
        Frame f4 = set.stream().filter(f -> f.heldPageId() == id(4)).findFirst().orElseThrow();
        CompletableFuture<Void> checkpointer = CompletableFuture.runAsync(() -> {
            writeImage(f4);
            for (Frame f : set) if (f != f4) writeImage(f);
        }, threads);
        try {
            checkpointer.get(60, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("the checkpointer is stuck on page 4, latched by a writer waiting for a checkpoint-buffer slot", e);
        }
        writer.get(60, TimeUnit.SECONDS);

        for (int i = 0; i < 6; i++) assertArrayEquals(body(i, 1), onDisk(i), "the checkpoint wrote page " + i + " as at the mark");
        for (int i = 0; i < 6; i++) assertArrayEquals(body(i, i == 3 ? 1 : 2), inMemory(i), "page " + i + " holds its last change");
        assertEquals(0, memory.checkpointBufferUsed(), "every slot is given back");
    }

    private void open() {
        store = new PageStore(FileIOFactory.standard(), dir.resolve("pages"), PAGE);
        memory = new PageMemory(store, (long) FRAMES * PAGE, (long) SLOTS * PAGE);
    }

    private static boolean waitingForCopies(Thread t) {
        return t != null && Arrays.stream(t.getStackTrace()).anyMatch(e -> e.getMethodName().equals("reserveCopies"));
    }

    /** What the checkpointer does for one page: its image at the mark into its file, then out of the set. */
    private void writeImage(Frame f) {
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        memory.copyCheckpointImage(f, image, 0);
        PageChecksum.stamp(image, 0, PAGE);
        store.write(f.heldPageId(), image, 0);
        memory.finishCheckpointPage(f);
    }

    private void write(int index, int version) {
        Page p = version == 1 ? memory.acquireNew(id(index)) : memory.acquireWrite(id(index));
        try {
            p.type(PageHeader.TYPE_LEAF);
            p.putBytes(PageHeader.SIZE, body(index, version), 0, PAGE - PageHeader.SIZE);
        } finally {
            memory.releaseWrite(p);
        }
    }

    private byte[] inMemory(int index) {
        Page p = memory.acquireRead(id(index));
        try {
            byte[] b = new byte[PAGE - PageHeader.SIZE];
            p.getBytes(PageHeader.SIZE, b, 0, b.length);
            return b;
        } finally {
            memory.releaseRead(p);
        }
    }

    private byte[] onDisk(int index) {
        ByteBuffer disk = ByteBuffer.allocateDirect(PAGE);
        store.read(id(index), disk, 0);
        byte[] b = new byte[PAGE - PageHeader.SIZE];
        disk.get(PageHeader.SIZE, b);
        return b;
    }

    private static long id(int index) {
        return PageId.of(FILE, index);
    }

    /** Deterministic body of page {@code index}, version {@code version}. */
    private static byte[] body(int index, int version) {
        byte[] b = new byte[PAGE - PageHeader.SIZE];
        Arrays.fill(b, (byte) (index * 16 + version));
        return b;
    }
}
