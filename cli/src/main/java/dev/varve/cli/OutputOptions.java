package dev.varve.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.Map;

/** Where a command prints, and whether as JSON ({@code --json}) for scripts. */
final class OutputOptions {
    @Option(names = "--json", description = "JSON instead of text: one object, or one object per line for listings.")
    boolean json;

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    PrintWriter err() {
        return spec.commandLine().getErr();
    }

    /** Prints a report as JSON or as text. */
    void print(Map<String, ?> report) {
        Report.print(out(), report, json);
    }
}
