package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.flipByte;
import static dev.varve.engine.FixtureSupport.pageFile;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A destroyed partition's old leaves stay in its page file, still typed as leaves, until their pages are taken again
 * (the destroy only marks them erased in the meta page). Salvage reads a damaged partition's page file leaf by leaf,
 * so it must leave the erased pages out: before, it handed back every entry the partition held before the destroy,
 * data a grid had moved elsewhere, as if it were the partition's.
 */
@Timeout(120)
class DestroyedPartitionSalvageTest {
    private static final int OLD_KEYS = 3000;

    @TempDir
    Path dir;

    @Test
    void aDamagedPartitionSalvagesNothingOfWhatItHeldBeforeItWasDestroyed() throws Exception {
        VarveConfig config = FixtureSupport.small(dir).build();
        try (Varve store = Varve.open(config)) {
            Table t = store.table("grid", TableOptions.callerPlaced(2));
            for (int i = 0; i < OLD_KEYS; i += 20) {
                int from = i;
                store.write(b -> {
                    for (int k = from; k < from + 20; k++) b.put("grid", 0, utf8("old-" + k), bytes(k, 120));
                });
            }
            store.checkpoint().get(60, TimeUnit.SECONDS); // the old leaves reach the page file
            t.partition(0).destroy();
            t.partition(0).put(utf8("new-0"), utf8("kept"));
            t.partition(1).put(utf8("other"), utf8("kept too"));
        } // close checkpoints: the meta page erases the old leaves, which the file still holds
        // the root (page 1, after the file's header and the meta page): the read-only scan of partition 0 fails on it,
        // and salvage reads the rest of the partition from its page file
        flipByte(pageFile(dir, 1, 0), 2 * 4096L + 100);

        List<String> entries = new ArrayList<>();
        TreeMap<String, String> lost = new TreeMap<>();
        StoreSalvager.Result result = StoreSalvager.salvage(config, new StoreSalvager.Sink() {
            @Override
            public void table(String name, TableOptions options) {
            }

            @Override
            public void entry(String table, int partition, byte[] key, byte[] value) {
                entries.add(partition + ":" + new String(key, StandardCharsets.UTF_8));
            }

            @Override
            public void lost(Path file, long offset, String what) {
                lost.put(file.getFileName() + "@" + offset, what);
            }
        });
        assertTrue(result.opened(), "the store opens read-only: " + result.openFailure());
        assertFalse(lost.isEmpty(), "the damaged root is reported lost");
        assertTrue(entries.stream().noneMatch(e -> e.startsWith("0:old-")), () -> entries.stream().filter(e -> e.startsWith("0:old-")).count()
                + " entries of partition 0 from before its destroy were salvaged as its data; first: "
                + entries.stream().filter(e -> e.startsWith("0:old-")).findFirst().orElseThrow());
        assertEquals(List.of("1:other"), entries, "the root holding new-0 is damaged: only partition 1's entry is left");
    }
}
