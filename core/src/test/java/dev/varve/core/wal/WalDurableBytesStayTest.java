package dev.varve.core.wal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Under FSYNC a commit is acknowledged once an fdatasync covering its record returned; from then on a power cut must
 * find the record's bytes as they were, so no later write may change them. A staged segment's force writes its range
 * from the staging buffer, which the next segment takes over at a switch: a force of the old segment still writing
 * from it then would put the next segment's bytes over acknowledged records. Several committers and a segment switch
 * every few hundred records make the switch's force of the old segment race the group commit's force of it.
 */
@Timeout(120)
class WalDurableBytesStayTest {
    private static final long SEGMENT = 256 * 1024;

    @TempDir
    Path dir;

    /** Keeps, per segment file, the bytes an fdatasync made durable, and records every write that changes one. */
    private static final class DurableWatch extends ForwardingFileIOFactory {
        final List<String> violations = Collections.synchronizedList(new ArrayList<>());

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            FileIO f = delegate.open(file, create);
            if (!file.getFileName().toString().contains(".seg")) return f;
            return new Watched(f);
        }

        private final class Watched extends ForwardingFileIO {
            private final byte[] durable = new byte[(int) SEGMENT];
            private final boolean[] isDurable = new boolean[(int) SEGMENT];
            private final List<Object[]> pending = new ArrayList<>(); // {position, bytes} written since the last force began

            Watched(FileIO f) {
                super(f);
            }

            @Override
            public void write(ByteBuffer src, long position) throws IOException {
                byte[] b = new byte[src.remaining()];
                src.duplicate().get(b);
                synchronized (this) {
                    for (int i = 0; i < b.length && position + i < SEGMENT; i++) {
                        int at = (int) position + i;
                        if (isDurable[at] && durable[at] != b[i]) {
                            violations.add(path().getFileName() + ": a write at " + position + " changes byte " + at
                                    + " from " + durable[at] + " to " + b[i] + ", written before a force began");
                            break;
                        }
                    }
                    pending.add(new Object[] {position, b});
                }
                delegate.write(src, position);
            }

            @Override
            public void force() throws IOException {
                // An fsync writes out what the page cache holds when it runs, so the bytes written before it began
                // count as durable from its start: a write changing them while it runs may reach the disk instead.
                synchronized (this) {
                    for (Object[] w : pending) {
                        int at = (int) (long) (Long) w[0];
                        byte[] b = (byte[]) w[1];
                        for (int i = 0; i < b.length && at + i < SEGMENT; i++) {
                            durable[at + i] = b[i];
                            isDurable[at + i] = true;
                        }
                    }
                    pending.clear();
                }
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(300)); // a disk is slower than the page cache
                delegate.force();
            }
        }
    }

    @Test
    void noWriteChangesBytesAnEarlierFsyncMadeDurable() throws Exception {
        DurableWatch io = new DurableWatch();
        int threads = 4;
        int perThread = 600;
        try (Wal wal = Wal.open(dir, io, SEGMENT, WalSyncMode.FSYNC, null)) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int thread = t;
                    futures.add(pool.submit(() -> {
                        for (int seq = 0; seq < perThread; seq++) {
                            byte[] payload = new byte[200 + (thread * 131 + seq * 17) % 900];
                            java.util.Arrays.fill(payload, (byte) (thread + 1));
                            wal.commit(wal.append(7, ByteBuffer.wrap(payload)));
                        }
                        return null;
                    }));
                }
                for (Future<?> f : futures) f.get(100, TimeUnit.SECONDS);
            } finally {
                pool.shutdown();
            }
            assertTrue(WalSegmentDescriptor.segmentIndex(wal.position(), SEGMENT) > 3, "several segment switches");
        }
        assertEquals(List.of(), io.violations.subList(0, Math.min(5, io.violations.size())),
                io.violations.size() + " writes changed durable bytes");
    }
}
