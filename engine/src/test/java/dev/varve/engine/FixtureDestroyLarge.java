package dev.varve.engine;

import java.nio.file.Files;
import java.nio.file.Path;

import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.utf8;

/**
 * Child JVM of {@link BatchAndPartitionTest}: destroys a partition holding more pages than the data region. Exit 0
 * when destroy completed and the partition is empty; a watchdog halts with exit 3 and the stuck stack if it hangs.
 */
public final class FixtureDestroyLarge {
    private FixtureDestroyLarge() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        try (Varve store = Varve.open(FixtureSupport.small(dir).partitions(1).build())) { // 8 MiB region = 2048 pages
            Table t = store.table("d");
            for (int i = 0; i < 400; i++) t.put(utf8("big" + i), bytes(i, 30_000)); // ~3000 pages
            store.checkpoint().join();
            long fileBytes = Files.size(FixtureSupport.pageFile(dir, 1, 0));
            System.out.println("partition file " + fileBytes + " bytes, region " + store.config().dataRegionSize() + " bytes");
            if (fileBytes <= store.config().dataRegionSize()) throw new AssertionError("partition not larger than the region");
            FixtureChildJvm.watchdog(20, "destroy of a partition larger than the data region");
            t.partition(0).destroy();
            if (t.partition(0).size() != 0) throw new AssertionError("destroyed partition not empty");
            t.put(utf8("after"), utf8("destroy"));
            if (!new String(t.get(utf8("after"))).equals("destroy")) throw new AssertionError("write after destroy lost");
        }
        try (Varve store = Varve.open(FixtureSupport.small(dir).partitions(1).build())) {
            Table t = store.table("d");
            if (t.partition(0).size() != 1) throw new AssertionError("after reopen: size " + t.partition(0).size());
        }
        System.out.println("DESTROY-OK");
        System.exit(0);
    }
}
