package dev.varve.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** One run of the tool in this JVM: exit code, standard output and standard error. */
record CliRun(int code, String out, String err) {
    static CliRun of(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(out), new PrintWriter(err), args);
        return new CliRun(code, out.toString(), err.toString());
    }

    /** A damage of {@code verify --json}: file and offset. */
    record Damage(String file, long offset, String what) {
    }

    /** The damage list of a {@code verify --json} output. */
    List<Damage> damage() {
        List<Damage> d = new ArrayList<>();
        Matcher m = Pattern.compile("\\{\"file\":\"([^\"]*)\",\"offset\":(-?\\d+),\"what\":\"((?:[^\"\\\\]|\\\\.)*)\"}").matcher(out);
        while (m.find()) d.add(new Damage(m.group(1), Long.parseLong(m.group(2)), m.group(3)));
        return d;
    }

    @Override
    public String toString() {
        return "exit " + code + "\n--- out:\n" + out + "\n--- err:\n" + err;
    }
}
