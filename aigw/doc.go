// Package aigw is the AI gateway: detection and redaction, block rules, model providers and
// audit. (Built with the AI gateway issue.)
package aigw
