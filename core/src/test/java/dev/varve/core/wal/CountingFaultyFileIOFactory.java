package dev.varve.core.wal;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.io.MappedRegion;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Wraps the real file system for WAL tests: counts forces of records (what a commit costs: a mapped range forced, or a
 * staged segment's bytes written and {@code fdatasync}ed), can slow them down like a real disk, can fail forces, writes or opens of chosen files with an {@link IOException},
 * can count the forces one thread runs, and can hold renames to chosen names and mapped forces.
 */
final class CountingFaultyFileIOFactory extends ForwardingFileIOFactory {
    final AtomicInteger recordForces = new AtomicInteger();
    /** Forces through a mapping ({@code msync}): what writing through a stage never does. */
    final AtomicInteger mappedForces = new AtomicInteger();
    volatile long forceDelayNanos;
    volatile boolean failForce;
    volatile boolean failWrite;
    /** Opens of files whose name contains this fail; null for none. */
    volatile String failOpenOf;
    /** Forces of records run by this thread are counted in {@link #forcesOnWatched}; null for none. */
    volatile Thread watched;
    final AtomicInteger forcesOnWatched = new AtomicInteger();
    /** Renames to a name containing {@link #holdRenamesTo} wait until this latch opens. */
    volatile CountDownLatch renameGate = new CountDownLatch(0);
    volatile String holdRenamesTo;
    /** Renames that reached {@link #renameGate} while it was closed. */
    final AtomicInteger renamesHeld = new AtomicInteger();
    /**
     * Forces of records wait until this latch opens (an {@code msync} or {@code fdatasync} a busy disk holds);
     * {@link #recordForcesHeld} counts them.
     */
    volatile CountDownLatch recordForceGate = new CountDownLatch(0);
    final AtomicInteger recordForcesHeld = new AtomicInteger();

    @Override
    public void atomicMove(Path from, Path to) throws IOException {
        String hold = holdRenamesTo;
        if (hold != null && to.getFileName().toString().contains(hold)) {
            CountDownLatch gate = renameGate;
            if (gate.getCount() > 0) renamesHeld.incrementAndGet();
            await(gate, "the rename");
        }
        delegate.atomicMove(from, to);
    }

    /** Waits until the test opens {@code gate}; an interrupt fails the held call {@code what} as the disk's would. */
    private static void await(CountDownLatch gate, String what) throws IOException {
        try {
            gate.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while a test held " + what, e);
        }
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        String fail = failOpenOf;
        if (fail != null && file.getFileName().toString().contains(fail)) {
            throw new IOException("injected open failure");
        }
        return new CountingFileIO(delegate.open(file, create));
    }

    private void beforeForce() throws IOException {
        if (failForce) throw new IOException("injected fsync failure");
        if (Thread.currentThread() == watched) forcesOnWatched.incrementAndGet();
        long delay = forceDelayNanos;
        if (delay > 0) LockSupport.parkNanos(delay);
    }

    /** A force of records: counted, and held while {@link #recordForceGate} is closed. */
    private void beforeRecordForce() throws IOException {
        beforeForce();
        recordForces.incrementAndGet();
        CountDownLatch gate = recordForceGate;
        if (gate.getCount() > 0) {
            recordForcesHeld.incrementAndGet();
            await(gate, "the force");
        }
    }

    /** Counts and fails what the factory's switches say; every other call goes to the real file. */
    private final class CountingFileIO extends ForwardingFileIO {
        CountingFileIO(FileIO file) {
            super(file);
        }

        /** A full disk refuses the writes that need new blocks; those over blocks a file has (zeros included) succeed. */
        @Override
        public void write(ByteBuffer src, long position) throws IOException {
            if (failWrite && position + src.remaining() > delegate.size()) throw new IOException("injected write failure (disk full)");
            delegate.write(src, position);
        }

        @Override
        public void force() throws IOException {
            beforeForce();
            delegate.force();
        }

        @Override
        public void forceData() throws IOException {
            beforeRecordForce();
            delegate.forceData();
        }

        @Override
        public MappedRegion map(long position, int length) throws IOException {
            return withForce(delegate.map(position, length), (region, offset, len) -> {
                beforeRecordForce();
                mappedForces.incrementAndGet();
                region.force(offset, len);
            });
        }
    }
}
