package dev.varve.cli;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code varve backup DIR [--as-of ID] --to NEWDIR}: a snapshot (or the current state) of a store directory as a new,
 * ordinary store; {@code varve backup --from HOST:PORT (--as-of ID | --follow) --to NEWDIR}: the same pulled from a
 * store that {@code varve serve} serves (see {@link RemoteBackup}).
 */
@Command(name = "backup", mixinStandardHelpOptions = true,
        description = {"Writes a new, ordinary store directory whose current state equals a store as of snapshot ID (without --as-of: its "
                + "current state). The new store opens with Varve.open and passes `varve verify`; it has no snapshots. Tables keep their "
                + "placement and partition count, and every key its partition.",
                "With DIR the source is a store directory, opened read-only: it does not change.",
                "With --from the source is a live store served by `varve serve` (snapshot shipping over one connection, checksummed "
                        + "frames). Until the image is complete and verified NEWDIR refuses to open as a store; a cut transfer is "
                        + "completed by running the same command again. With --follow (the server must allow writes) the server "
                        + "declares a snapshot, ships it, then streams every change it commits: NEWDIR is kept as a standby until "
                        + "Ctrl-C or SIGTERM, openable at the latest change it holds or at any server snapshot declared since."})
final class BackupCommand implements Callable<Integer> {
    @Parameters(index = "0", arity = "0..1", paramLabel = "DIR", description = "The store directory to copy (not with --from).")
    Path dir;

    @Mixin
    LayoutOptions layout;

    @Option(names = "--from", paramLabel = "HOST:PORT", description = "Pull the snapshot from the store served there instead of DIR.")
    String from;

    @Option(names = "--as-of", paramLabel = "ID", description = "The snapshot to copy.")
    Long asOf;

    @Option(names = "--follow", description = "With --from: the image of a snapshot the server declares, then its changes as they commit.")
    boolean follow;

    @Option(names = "--recovery-mode", paramLabel = "MODE",
            description = "With --from: the new store's recovery mode, ${COMPLETION-CANDIDATES} (default: the server's).")
    RecoveryMode recoveryMode;

    @Option(names = "--retention", paramLabel = "RULES",
            description = "With --follow: the standby's retention policy for the snapshots it follows, levels as varve.retention takes them, "
                    + "e.g. keepLast(100) (default: keepAll(), every one kept). Open the standby with the same policy.")
    String retention;

    @Mixin
    TransferLimits limits;

    @Mixin
    NewStoreOptions newStore;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() throws IOException {
        if ((dir == null) == (from == null)) throw new IllegalArgumentException("give either a store directory DIR or --from HOST:PORT");
        if (from != null) {
            if (layout.given()) throw new IllegalArgumentException("--archive and --config describe a store directory; not with --from");
            if (newStore.properties != null) throw new IllegalArgumentException("--new-config is not supported with --from: the image keeps the server's layout");
            if (follow == (asOf != null)) throw new IllegalArgumentException("with --from give either --as-of ID or --follow");
            if (retention != null && !follow) throw new IllegalArgumentException("--retention needs --follow: a backup holds no snapshots");
            RankTreePolicy policy = retention == null ? null : RankTreePolicy.parse(retention);
            return new RemoteBackup(RemoteBackup.hostPort(from), asOf, newStore.to, recoveryMode, policy, limits, output).run(follow);
        }
        if (follow || recoveryMode != null || retention != null) throw new IllegalArgumentException("--follow, --recovery-mode and --retention need --from");
        List<String> bounds = limits.given();
        if (!bounds.isEmpty())
            throw new IllegalArgumentException(String.join(" and ", bounds) + (bounds.size() == 1 ? " needs" : " need") + " --from: it bounds a transfer from a server");
        return local();
    }

    /** Copies the store in {@code dir}: table by table, partition by partition. */
    private int local() throws IOException {
        Main.refuseInsideSource("--to", newStore.to, dir, layout);
        newStore.checkEmpty();
        Map<String, Object> perTable = new LinkedHashMap<>();
        try (Varve s = StoreOptions.openReadOnly(dir, layout); ReadOptions.Source src = new ReadOptions.Source(s, asOf)) {
            newStore.build(() -> copy(s, src, perTable));
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("store", newStore.to.toString());
        r.put("asOf", asOf == null ? "current state" : asOf);
        r.put("entries", perTable);
        output.print(r);
        return Main.OK;
    }

    /** Writes what {@code src} reads of {@code s} into the new store, closed on return; {@code perTable} gets each table's entries. */
    private void copy(Varve s, ReadOptions.Source src, Map<String, Object> perTable) throws IOException {
        try (Varve target = Varve.open(newStore.config(s.config().pageSize(), s.config().partitions()))) {
            BatchWriter w = new BatchWriter(target);
            for (String name : src.tables()) { // as of the snapshot: a table created after it is not in the copy
                Table table = src.table(name);
                target.table(name, table.options());
                long[] n = {0};
                for (int p = 0; p < table.partitions(); p++) {
                    int partition = p;
                    src.forEach(table.partition(p), null, null, (k, v) -> {
                        w.put(name, partition, k, v);
                        n[0]++;
                    });
                }
                perTable.put(name, n[0]);
            }
            w.flush();
        }
    }
}
