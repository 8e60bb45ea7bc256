package dev.varve.infinispan;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import org.infinispan.configuration.cache.ConfigurationBuilder;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.manager.DefaultCacheManager;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The real file system under a store, made to fail as a disk does: while {@link #full}, writes, growing a file and
 * creating one fail with ENOSPC's message; while {@link #failing}, every open, write and fsync fails with EIO's. It
 * counts the looks for a store's {@code wal} directory at {@code walDir} (a reopen's check that the store is there).
 */
final class FaultyDisk extends ForwardingFileIOFactory {
    final AtomicBoolean full = new AtomicBoolean();
    final AtomicBoolean failing = new AtomicBoolean();
    final AtomicInteger storeLookups = new AtomicInteger();
    private final Path walDir;

    FaultyDisk(Path walDir) {
        this.walDir = walDir;
    }

    private void check(Path file, boolean takesSpace) throws IOException {
        if (failing.get()) throw new IOException("Input/output error: " + file);
        if (takesSpace && full.get()) throw new IOException("No space left on device: " + file);
    }

    /**
     * A cache manager with a local cache {@code c} whose Varve store lies under {@code location} on this disk;
     * Infinispan asks whether it is available every 100 ms.
     */
    DefaultCacheManager cacheManager(Path location) {
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.persistence().availabilityInterval(100).addStore(VarveStoreConfigurationBuilder.class).location(location.toString())
                .dataRegionSize(16L << 20).checkpointBufferSize(2L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).fileIO(this);
        DefaultCacheManager m = new DefaultCacheManager(new GlobalConfigurationBuilder().nonClusteredDefault().build());
        m.defineConfiguration("c", cb.build());
        return m;
    }

    @Override
    public boolean exists(Path file) {
        if (file.equals(walDir)) storeLookups.incrementAndGet();
        return super.exists(file);
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        check(file, create && !Files.exists(file));
        return new ForwardingFileIO(super.open(file, create)) {
            @Override
            public void write(ByteBuffer src, long position) throws IOException {
                check(path(), true);
                super.write(src, position);
            }

            @Override
            public void truncate(long size) throws IOException {
                check(path(), size > super.size());
                super.truncate(size);
            }

            @Override
            public void force() throws IOException {
                check(path(), false);
                super.force();
            }
        };
    }
}
