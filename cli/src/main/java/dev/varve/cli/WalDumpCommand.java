package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.engine.WalInspector;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code varve wal-dump DIR [--from-lsn N]}: the WAL's records. */
@Command(name = "wal-dump", mixinStandardHelpOptions = true,
        description = {"Prints the WAL's records from --from-lsn (default: the first held): LSN, type, payload bytes and, for a batch, "
                + "each operation's table, partition, key and value size (-1: remove). A torn tail is left out, as recovery would "
                + "cut it. Read-only.",
                "The WAL is judged as the store's open judges it: from the LSN recovery reads from (the last checkpoint's mark), each "
                        + "segment under the walSyncMode that wrote it (a segment of WAL format 1, which does not record it, under the "
                        + "walSyncMode of --config, default LOG_ONLY). Damage before that LSN, which recovery never reads, is noted on "
                        + "stderr with its file and offset, and the records go on from the next one that checks out."})
final class WalDumpCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

    @Option(names = "--from-lsn", paramLabel = "N", defaultValue = "0", description = "First LSN to show.")
    long fromLsn;

    @Option(names = "--limit", paramLabel = "N", description = "At most N records (default: all).")
    Long limit;

    @Option(names = "--encoding", paramLabel = "ENC", defaultValue = "utf8", description = "How keys are written: ${COMPLETION-CANDIDATES}.")
    Encoding encoding;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() {
        if (fromLsn < 0) throw new IllegalArgumentException("--from-lsn must be >= 0, was " + fromLsn);
        if (limit != null && limit < 0) throw new IllegalArgumentException("--limit must be >= 0, was " + limit);
        VarveConfig config = store.config();
        PrintWriter out = output.out();
        long[] n = {0};
        WalInspector.read(config, fromLsn, rec -> {
            if (limit != null && n[0] >= limit) return false;
            if ((n[0] & 1023) == 1023 && out.checkError()) return false; // the reader went away: stop; Main says so
            n[0]++;
            if (output.json) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("lsn", rec.lsn());
                m.put("type", rec.type());
                m.put("bytes", rec.bytes());
                if (!rec.detail().isEmpty()) m.put("detail", rec.detail());
                if (!rec.ops().isEmpty()) {
                    List<Map<String, Object>> ops = new ArrayList<>();
                    for (WalInspector.Op op : rec.ops()) {
                        Map<String, Object> o = new LinkedHashMap<>();
                        o.put("op", op.valueBytes() < 0 ? "remove" : "put");
                        o.put("tableId", op.tableId());
                        o.put("table", op.table());
                        o.put("partition", op.partition());
                        o.put("key", encoding.encode(op.key()));
                        o.put("valueBytes", op.valueBytes());
                        ops.add(o);
                    }
                    m.put("ops", ops);
                }
                out.println(Json.of(m));
            } else {
                out.println("lsn " + rec.lsn() + "  " + rec.type() + "  " + rec.bytes() + " bytes" + (rec.detail().isEmpty() ? "" : "  " + rec.detail()));
                for (WalInspector.Op op : rec.ops())
                    out.println("    " + (op.valueBytes() < 0 ? "remove" : "put   ") + " " + (op.table() == null ? "table " + op.tableId() : op.table())
                            + " p" + op.partition() + "  "
                            + encoding.encode(op.key()) + (op.valueBytes() < 0 ? "" : "  (" + op.valueBytes() + " bytes)"));
            }
            return true;
        }, damage -> { // the store opens: its records from where recovery reads are shown, the damage is told
            out.flush();
            output.err().println("varve: note: the WAL is damaged where recovery does not read it: " + damage + "; records go on at LSN "
                    + damage.resumeLsn());
            output.err().flush();
        });
        out.flush();
        return Main.OK;
    }
}
