package dev.varve.core.memory;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.store.PageChecksum;
import dev.varve.core.store.PageStore;
import dev.varve.core.tree.BPlusTreeRandomizedTest;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.Timeout;

/**
 * The randomized tree sequences of {@link BPlusTreeRandomizedTest}, run over a real {@link PageMemory} backed by a
 * {@link PageStore} in a temporary directory. The region is small (1280..4096 frames) and a tiny test "checkpointer"
 * ({@link Flushing}) writes dirty pages to the page file whenever more than a quarter of the region is held, at
 * moments the tree holds no page; so clean pages get evicted and the tree keeps re-reading them from disk (through the
 * CRC check) while the model comparison runs — and descents reach children through frames' hints
 * ({@link ChildHints}) whose frames were evicted and reused meanwhile. {@link #evictionAndRereadHappened()} proves the
 * path was exercised.
 */
@Timeout(120)
class PageMemoryTreeRandomizedTest extends BPlusTreeRandomizedTest {
    /** Per page size: pages evicted and pages read back from disk, over all runs. */
    private static final Map<Integer, long[]> TOTALS = new ConcurrentHashMap<>();
    private static final AtomicLong RUNS = new AtomicLong();

    @TempDir
    Path dir;

    private Flushing current;

    @Override
    protected PageAccess newPages(int pageSize) {
        finishCurrent();
        // large enough for the flush threshold plus one operation's worth of dirty pages (a 1 MiB overwrite at 1 KiB pages
        // writes ~2100 pages: new chain + old chain freed), small enough that the data set does not fit
        int frames = pageSize == 1024 ? 4096 : 1280;
        PageStore store = new PageStore(FileIOFactory.standard(), dir.resolve("run-" + RUNS.incrementAndGet()), pageSize);
        PageMemory memory = new PageMemory(store, (long) frames * pageSize, 64L * pageSize);
        current = new Flushing(memory, store, frames / 4);
        return current;
    }

    @AfterEach
    void finishCurrent() {
        if (current == null) return;
        current.assertNothingHeld("run");
        long[] t = TOTALS.computeIfAbsent(current.pageSize(), k -> new long[3]);
        synchronized (t) {
            t[0] += current.memory.pagesEvicted();
            t[1] += current.memory.pagesRead();
            t[2] += current.flushes;
        }
        current.memory.close();
        current.store.close();
        current = null;
    }

    @AfterAll
    static void evictionAndRereadHappened() {
        System.out.println("PageMemoryTreeRandomizedTest totals (pageSize -> evicted, read, flushes): "
                + TOTALS.entrySet().stream().map(e -> e.getKey() + "=" + java.util.Arrays.toString(e.getValue())).toList());
        for (int ps : new int[]{1024, 4096}) {
            long[] t = TOTALS.get(ps);
            if (t == null) continue; // a single-seed rerun of another page size
            assertTrue(t[0] > 0, "page size " + ps + ": no page was ever evicted, the test did not exercise eviction");
            assertTrue(t[1] > 0, "page size " + ps + ": no page was ever re-read from disk");
        }
    }

    /**
     * A {@link PageAccess} over page memory that checks every acquire is released, and when the tree holds no page and
     * more than {@code threshold} pages are held, runs a checkpoint by hand: markCheckpoint, markedPages, copy each
     * image, stamp its CRC, write it to the page store, finishCheckpointPage. Single-threaded, like the tree test.
     */
    static final class Flushing implements PageAccess {
        final PageMemory memory;
        final PageStore store;
        private final int threshold;
        private final ByteBuffer image;
        private int holds;
        long flushes;

        Flushing(PageMemory memory, PageStore store, int threshold) {
            this.memory = memory;
            this.store = store;
            this.threshold = threshold;
            this.image = ByteBuffer.allocateDirect(memory.pageSize());
        }

        @Override
        public int pageSize() {
            return memory.pageSize();
        }

        @Override
        public Page acquireRead(long pageId) {
            Page p = memory.acquireRead(pageId);
            holds++;
            return p;
        }

        @Override
        public Page acquireReadChild(Page parent, int index, long childId) {
            Page p = memory.acquireReadChild(parent, index, childId); // through the parent frame's hints
            holds++;
            return p;
        }

        @Override
        public void releaseRead(Page page) {
            memory.releaseRead(page);
            released();
        }

        @Override
        public Page acquireWrite(long pageId) {
            Page p = memory.acquireWrite(pageId);
            holds++;
            return p;
        }

        @Override
        public Page acquireWriteChild(Page parent, int index, long childId) {
            Page p = memory.acquireWriteChild(parent, index, childId);
            holds++;
            return p;
        }

        @Override
        public Page acquireNew(long pageId) {
            Page p = memory.acquireNew(pageId);
            holds++;
            return p;
        }

        @Override
        public void releaseWrite(Page page) {
            memory.releaseWrite(page);
            released();
        }

        private void released() {
            if (--holds < 0) throw new IllegalStateException("more releases than acquires");
            if (holds == 0 && memory.heldPages() > threshold) flush();
        }

        void flush() {
            memory.markCheckpoint();
            List<Frame> set = memory.markedPages();
            for (Frame f : set) {
                memory.copyCheckpointImage(f, image, 0);
                PageChecksum.stamp(image, 0, image.capacity());
                store.write(f.heldPageId(), image, 0);
                memory.finishCheckpointPage(f);
            }
            flushes++;
            if (memory.heldPages() != 0) throw new AssertionError(memory.heldPages() + " pages still held after a full flush");
        }

        void assertNothingHeld(String after) {
            if (holds != 0) throw new AssertionError(holds + " page(s) still held after " + after);
        }
    }
}
