package dev.varve.checkpoint;

import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageChecksum;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.ToLongFunction;

/**
 * A checkpoint's page writes, steps (3) and (6) of {@link Checkpointer}: the recovery files of the pages' checkpoint
 * images, and the pages themselves into their page files, each in parallel on the checkpoint threads ({@link
 * CheckpointPool}), slice by slice. The markers, fsyncs and listeners around them are the checkpointer's.
 */
final class CheckpointPageWriter {
    /** Pages a checkpoint thread writes in one call at most (a run of consecutive pages of one file). */
    private static final int RUN_PAGES = 32;
    /**
     * Recovery-file entries a checkpoint thread compresses between two yields of its core. Checkpoint threads run for
     * tens of milliseconds at a time, and the OS may run them on a writer's core while the other stays idle (on the
     * 2-vCPU VMs Varve is benchmarked on, until its next tick): yielding every 64 pages (some 0.3 ms of Snappy), and
     * after every run it writes, keeps a writer from waiting behind them for milliseconds (docs/performance.md,
     * "Checkpoint threads that yield").
     */
    private static final int ENTRIES_BETWEEN_YIELDS = 64;
    private final PageMemory memory;
    private final CheckpointMarkers markers;
    private final PageCodec codec;
    private final ToLongFunction<Page> unusedRange;
    private final CheckpointPool pool;
    private final Throttle throttle;
    /** Told of a slice's failure as it happens. */
    private final Consumer<Throwable> failed;

    /**
     * Writes for {@code memory}'s checkpoints; {@code failed} is told at once of a slice that fails: another slice may
     * wait for the latch of a page whose writer waits for a slot of the same checkpoint, and only the checkpointer's
     * failure lets that writer go.
     */
    CheckpointPageWriter(PageMemory memory, CheckpointMarkers markers, PageCodec codec, ToLongFunction<Page> unusedRange,
                         CheckpointPool pool, Throttle throttle, Consumer<Throwable> failed) {
        this.memory = memory;
        this.markers = markers;
        this.codec = codec;
        this.unusedRange = unusedRange;
        this.pool = pool;
        this.throttle = throttle;
        this.failed = failed;
    }

    /** What {@link #writeRecoveryFiles} wrote: entries and bytes of each recovery file, as the start marker lists them. */
    record RecoveryFiles(int[] entries, long[] bytes) {
        static final RecoveryFiles NONE = new RecoveryFiles(new int[0], new long[0]);

        long total() {
            long t = 0;
            for (long b : bytes) t += b;
            return t;
        }
    }

    /**
     * Writes the checkpoint {@code id}'s recovery files, one per checkpoint thread: each of {@code pages}' checkpoint
     * images, stamped and compressed by the store's codec (IEP-113).
     */
    RecoveryFiles writeRecoveryFiles(long id, List<Frame> pages) {
        List<List<Frame>> slices = CheckpointPool.slices(pages, pool.threads());
        int[] entries = new int[slices.size()];
        long[] bytes = new long[slices.size()];
        int pageSize = memory.pageSize();
        pool.forEachIndexed(slices, (n, slice) -> {
            ByteBuffer buf = ByteBuffer.allocateDirect(pageSize);
            Page image = new Page(buf, 0, pageSize);
            try (RecoveryFileWriter w = new RecoveryFileWriter(markers.io(), markers.recoveryFilePath(id, n), id, pageSize, codec, unusedRange)) {
                int appended = 0;
                for (Frame f : slice) {
                    long pageId = f.heldPageId();
                    memory.copyCheckpointImage(f, buf, 0);
                    PageChecksum.stamp(buf, 0, pageSize);
                    w.append(pageId, image);
                    throttle.entryWritten();
                    if (++appended % ENTRIES_BETWEEN_YIELDS == 0) Thread.yield();
                }
                w.finish();
                entries[n] = w.entries();
                bytes[n] = w.bytes();
            }
        });
        return new RecoveryFiles(entries, bytes);
    }

    /**
     * Writes {@code pages} (sorted by id) into their page files on the checkpoint threads, each finished once written;
     * returns the files written to.
     */
    Set<Integer> writePages(List<Frame> pages) {
        Set<Integer> touched = ConcurrentHashMap.newKeySet();
        int pageSize = memory.pageSize();
        pool.forEachIndexed(CheckpointPool.slices(pages, pool.threads()), (n, slice) -> {
            try {
                writeSlice(slice, touched, pageSize);
            } catch (RuntimeException | Error e) {
                failed.accept(e); // at once, not once every slice is done (see the constructor)
                throw e;
            }
        });
        return touched;
    }

    /**
     * Writes one slice, sorted by id: its runs of consecutive pages of a file each go out in one write (one system
     * call where there were up to RUN_PAGES), and their pages are finished only once written, as an evicted page's
     * file must hold its image.
     */
    private void writeSlice(List<Frame> slice, Set<Integer> touched, int pageSize) {
        ByteBuffer run = ByteBuffer.allocateDirect(RUN_PAGES * pageSize);
        List<Frame> latched = new ArrayList<>(); // written, to be finished once a writer lets go of them
        for (int from = 0, count; from < slice.size(); from += count) {
            long first = slice.get(from).heldPageId();
            count = 0;
            do {
                memory.copyCheckpointImage(slice.get(from + count), run, count * pageSize);
                PageChecksum.stamp(run, count * pageSize, pageSize);
                count++;
            } while (count < RUN_PAGES && from + count < slice.size() && slice.get(from + count).heldPageId() == first + count
                    && PageId.fileId(first + count) == PageId.fileId(first));
            memory.store().write(first, run, 0, count);
            for (int i = 0; i < count; i++) {
                if (memory.tryFinishCheckpointPage(slice.get(from + i))) throttle.pageWritten();
                else latched.add(slice.get(from + i));
            }
            touched.add(PageId.fileId(first));
            Thread.yield(); // see ENTRIES_BETWEEN_YIELDS
        }
        for (Frame f : latched) {
            memory.finishCheckpointPage(f);
            throttle.pageWritten();
        }
    }
}
