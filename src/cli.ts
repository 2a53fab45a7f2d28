#!/usr/bin/env node
// The bin entry (dist/cli.js): the commands live in cli/.
import './cli/main.js';
