package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A loader kept every page file it wrote open until the image was finished, one or two descriptors per file: the
 * image of a store of many partitions ran the receiving process out of file descriptors. An image arrives file by
 * file; a file whose pages are all written is fsynced and closed, and {@link ImageLoader#finish} opens them one at a
 * time.
 */
@Timeout(120)
class ImageLoaderOpenFilesTest {
    private static final int TABLES = 6;
    private static final int PARTITIONS = 8;

    @TempDir
    Path dir;

    /**
     * Counts the files open through it and the most open at once, and the files closed with cached writes no fsync
     * through the same descriptor followed (Linux reports a write-back error to the descriptors open when it happened:
     * an fsync through one opened later would not see it).
     */
    private static final class CountingIO extends ForwardingFileIOFactory {
        /** Whether uncached writes are offered (where the file system has them): without, every write is cached. */
        final boolean uncached;
        final AtomicInteger open = new AtomicInteger();
        final AtomicInteger most = new AtomicInteger();
        final AtomicInteger closedUnsynced = new AtomicInteger();
        /**
         * Uncached handles closed while a write through them was under way, or after writes no fsync of their file
         * (through any descriptor: their bytes bypass the cache) began after: the loader runs these writes behind its
         * caller, and must wait for them before it fsyncs and closes the file.
         */
        final AtomicInteger closedBeforeUncachedWritesSynced = new AtomicInteger();
        /** By file: uncached writes under way, done, and done before the latest fsync of the file began. */
        private final Map<Path, long[]> uncachedWrites = new ConcurrentHashMap<>();

        CountingIO(boolean uncached) {
            this.uncached = uncached;
        }

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            return counted(delegate.open(file, create), true, file);
        }

        @Override
        public Optional<FileIO> openUncached(Path file, int alignment) throws IOException {
            if (!uncached) return Optional.empty();
            return delegate.openUncached(file, alignment).map(f -> counted(f, false, file)); // its writes bypass the cache
        }

        private FileIO counted(FileIO f, boolean cached, Path file) {
            most.accumulateAndGet(open.incrementAndGet(), Math::max);
            long[] writes = uncachedWrites.computeIfAbsent(file.toAbsolutePath().normalize(), p -> new long[3]);
            return new ForwardingFileIO(f) {
                private boolean closed;
                private boolean unsynced;

                @Override
                public void write(ByteBuffer src, long position) throws IOException {
                    unsynced = cached;
                    if (cached) {
                        super.write(src, position);
                        return;
                    }
                    synchronized (writes) {
                        writes[0]++;
                    }
                    try {
                        Thread.sleep(1); // a slow disk: the loader's caller moves on while the write is under way
                        super.write(src, position);
                    } catch (InterruptedException e) {
                        throw new IOException(e);
                    } finally {
                        synchronized (writes) {
                            writes[0]--;
                            writes[1]++;
                        }
                    }
                }

                @Override
                public void force() throws IOException {
                    long done;
                    synchronized (writes) {
                        done = writes[1];
                    }
                    super.force();
                    unsynced = false;
                    synchronized (writes) {
                        writes[2] = Math.max(writes[2], done);
                    }
                }

                @Override
                public void close() throws IOException {
                    if (!closed) {
                        open.decrementAndGet();
                        if (unsynced) closedUnsynced.incrementAndGet();
                        synchronized (writes) {
                            if (!cached && (writes[0] > 0 || writes[1] != writes[2])) closedBeforeUncachedWritesSynced.incrementAndGet();
                        }
                    }
                    closed = true;
                    super.close();
                }
            };
        }
    }

    @ParameterizedTest(name = "uncached writes offered: {0}")
    @ValueSource(booleans = {true, false})
    void theLoaderHoldsAFewFilesOpenNotOnePerPageFile(boolean uncached) throws Exception {
        VarveConfig source = VarveConfig.builder().path(dir.resolve("source")).dataRegionSize(16L << 20).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE)
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        VarveConfig target = source.toBuilder().path(dir.resolve("target")).build();
        CountingIO io = new CountingIO(uncached);
        try (Varve s = Varve.open(source)) {
            for (int t = 0; t < TABLES; t++) {
                Table table = s.table("t" + t, TableOptions.callerPlaced(PARTITIONS));
                for (int p = 0; p < PARTITIONS; p++) for (int i = 0; i < 50; i++) table.partition(p).put(bytes("k" + i), new byte[200]);
            }
            long id = s.snapshotNow();
            try (SnapshotImage image = SnapshotImage.open(s, id); ImageLoader loader = ImageLoader.create(target, io)) {
                int afterCreate = io.open.get(); // what the loader keeps open from its start (creating the empty store opened more)
                io.most.set(afterCreate);
                io.closedUnsynced.set(0);
                ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
                while (image.next(page.clear())) loader.write(image.fileId(), image.index(), page.flip());
                assertEquals(image.tables(), loader.finish());
                assertTrue(io.most.get() <= afterCreate + 4, "files open at once: " + io.most.get() + ", of " + (1 + TABLES * PARTITIONS) + " page files");
            }
        }
        assertEquals(0, io.open.get(), "every file the loader opened is closed");
        assertEquals(0, io.closedUnsynced.get(), "page files closed with writes no fsync through their descriptor followed");
        assertEquals(0, io.closedBeforeUncachedWritesSynced.get(), "uncached page files closed before their writes were done and fsynced");
        try (Varve copy = Varve.open(target)) {
            assertArrayEquals(new byte[200], copy.table("t5", TableOptions.callerPlaced(PARTITIONS)).partition(7).get(bytes("k49")));
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
