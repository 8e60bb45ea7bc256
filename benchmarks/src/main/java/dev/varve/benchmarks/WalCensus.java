package dev.varve.benchmarks;

import dev.varve.config.VarveConfig;
import dev.varve.engine.WalInspector;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * The physical records (page images, deltas, rebuilds) among the first {@link #RECORDS} of a killed child's WAL,
 * counted after {@link RecoveryTimeJob} has timed the open, not before: the count reads the WAL through
 * {@link WalInspector}, which first validates it with the scan code open runs, and run before the open it left that
 * code compiled and warm for a recovery that in earnest starts cold.
 *
 * <p>So the WAL is kept aside before the open by hard links, which copy and read no byte, in a directory laid out as
 * a store's with a {@code wal} directory only. The inspector then finds no checkpoint marker and reads from LSN 0, the
 * first record of segment 0, which the child's store (no checkpoint since its creation's) still holds; it finds no
 * store id either, so no segment is refused as another store's. The reopened store rewrites no file but the newest
 * segment: it creates each segment under a temporary name and renames it, and the segments it deletes stay reachable
 * through the links. In the newest it cuts a torn tail and appends after the child's records, which therefore come
 * first in the count; should it fill that segment, {@link #physicalRecords} links the successor in too, since a
 * sealed last segment is one whose successor was lost to the inspector.
 */
final class WalCensus implements AutoCloseable {
    /**
     * Records read from the WAL's start: WAL_PHYSICAL logs a page's image at its first change after the mark, so a
     * few records in suffice; reading no further keeps a large run's job from decoding GiBs of batches.
     */
    static final int RECORDS = 10_000;

    private final VarveConfig store;
    private final Path aside;

    private WalCensus(VarveConfig store, Path aside) {
        this.store = store;
        this.aside = aside;
    }

    /** Links the WAL files of {@code store}, whose store is closed, into {@code aside}, which must not exist. */
    static WalCensus keep(VarveConfig store, Path aside) throws IOException {
        Files.createDirectories(aside.resolve("wal"));
        WalCensus census = new WalCensus(store, aside);
        census.linkMissing();
        return census;
    }

    /** Counts, once the store is closed; the files the reopened store added since {@link #keep} are linked first. */
    long physicalRecords() throws IOException {
        linkMissing();
        long[] seen = new long[2]; // records read, physical ones
        WalInspector.read(store.toBuilder().path(aside).build(), 0, r -> {
            if (r.type().startsWith("PAGE_")) seen[1]++;
            return ++seen[0] < RECORDS;
        }, damage -> { }); // never called: with no marker to start from, the inspector validates from LSN 0
        return seen[1];
    }

    private void linkMissing() throws IOException {
        Path wal = store.path().resolve("wal");
        try (Stream<Path> files = Files.list(wal)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Path link = aside.resolve("wal").resolve(f.getFileName());
                if (!Files.exists(link)) Files.createLink(link, f);
            }
        }
    }

    /** Deletes the links: the blocks of segments the store deleted are freed only now. */
    @Override
    public void close() throws IOException {
        StoreDirs.delete(aside);
    }
}
